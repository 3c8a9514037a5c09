"""The clusters' own feed channels (docs/api.md "The feed", `cluster`): a socket authenticated
with a cluster's token (`{"op": "auth"}`) subscribes `cluster` and reads its cluster's row of
every tick of its island (market/cluster_ticks.py), and nobody else's.

Every cluster names its channel `cluster`; in the hub it is `cluster:<id>` (`Row.key`), a name
no client can subscribe (a channel `cluster:<anything>` is refused `forbidden`), so a socket
reaches only the channel of the cluster it authenticated as, and once authenticated a socket
stays that cluster's. A cluster's row is built into a message only while one of its sockets
listens; the latest is kept for the snapshot of the next subscribe (before the island's first
tick since the start, the subscribe's snapshot is the next tick's row).

The rows are never handed to the bus (feed/publisher.py publishes the catalog's feeds only), so
a feed edge, which serves whatever the bus holds to anyone, has no private row to serve: it
refuses `auth` and `cluster` (`forbidden`, saying where the channel is served).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import msgspec

from burstmarket.contract import ClusterTickView
from burstmarket.errors import Forbidden, Invalid, Unauthorized
from burstmarket.feed.catalog import row_schema
from burstmarket.feed.hub import Hub, Subscriber
from burstmarket.feed.messages import Row
from burstmarket.feed.protocol import CLUSTER_CHANNEL

Authenticate = Callable[[str], str | None]
"""A cluster token -> its cluster (None: no such token); from memory, on the event loop."""

FIELDS = tuple(name for name in ClusterTickView.__struct_fields__ if name not in ("tick", "time"))
"""The keys of a cluster row's `data` (the envelope carries tick and time)."""
SCHEMA = row_schema(ClusterTickView, FIELDS)

EDGE_DETAIL = (
    "a feed edge or a replay serves the public channels only; authenticate and subscribe "
    "`cluster` on the market's own /ws/market"
)


def key(cluster: str) -> str:
    """The hub's name of a cluster's channel."""
    return f"{CLUSTER_CHANNEL}:{cluster}"


def is_private(channel: str) -> bool:
    return channel == CLUSTER_CHANNEL or channel.startswith(CLUSTER_CHANNEL + ":")


class ClusterChannels:
    def __init__(self, hub: Hub, authenticate: Authenticate | None) -> None:
        self._hub = hub
        self._authenticate = authenticate
        self._latest: dict[str, ClusterTickView] = {}
        """Cluster -> its newest row."""

    @property
    def served(self) -> bool:
        """Whether this process serves the clusters' channels (a feed edge does not)."""
        return self._authenticate is not None

    def publish(self, views: Iterable[ClusterTickView]) -> None:
        """A tick's rows, each to its own cluster's sockets only; on the event loop."""
        for view in views:
            self._latest[view.cluster] = view
            if self._hub.listened(key(view.cluster)):
                self._hub.deliver(_row(view))

    def authenticate(self, subscriber: Subscriber, token: str) -> str:
        """The socket is the token's cluster's from now (a second cluster is refused)."""
        if self._authenticate is None:
            raise Forbidden(EDGE_DETAIL)
        cluster = self._authenticate(token)
        if cluster is None:
            raise Unauthorized("unknown token")
        if subscriber.cluster not in (None, cluster):
            raise Forbidden(
                "this socket is authenticated as another cluster; open a socket per cluster"
            )
        subscriber.cluster = cluster
        return cluster

    def check(self, subscriber: Subscriber, channel: str, from_tick: int | None) -> str:
        """The hub's key of the private `channel` the subscriber may join, else the refusal."""
        if self._authenticate is None:
            raise Forbidden(EDGE_DETAIL, channel=channel)
        if channel != CLUSTER_CHANNEL:
            raise Forbidden(
                f"a socket reads only its own cluster's channel, `{CLUSTER_CHANNEL}`",
                channel=channel,
            )
        if subscriber.cluster is None:
            raise Unauthorized(
                f'`{CLUSTER_CHANNEL}` needs the socket authenticated first: {{"op": "auth", '
                '"token": "<cluster token>"}'
            )
        if from_tick is not None:
            raise Invalid(
                "from_tick",
                f"`{CLUSTER_CHANNEL}` is not replayed; subscribe it without from_tick for a "
                "fresh snapshot (GET /api/k8s/jobs and /api/vm/capacity say what changed)",
            )
        return key(subscriber.cluster)

    def joined_as(self, subscriber: Subscriber, channel: str) -> str:
        """The hub's name of a channel the subscriber names (to leave it): `cluster` is its
        cluster's; `cluster:<id>` names nothing it can have joined."""
        if not is_private(channel):
            return channel
        if channel == CLUSTER_CHANNEL and subscriber.cluster is not None:
            return key(subscriber.cluster)
        return ""

    def start(self, subscriber: Subscriber) -> None:
        """The subscriber's cluster's snapshot now, or its next row as the snapshot."""
        assert subscriber.cluster is not None
        view = self._latest.get(subscriber.cluster)
        if view is None:
            subscriber.await_snapshot(key(subscriber.cluster))
        else:
            subscriber.start(_row(view), None)


def _row(view: ClusterTickView) -> Row:
    built = msgspec.to_builtins(view)
    data = {field: built[field] for field in FIELDS}
    return Row(CLUSTER_CHANNEL, view.island, view.tick, view.time, data, key=key(view.cluster))
