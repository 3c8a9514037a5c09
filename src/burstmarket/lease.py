"""Which market process runs an island: a lease in Redis per island, with an expiry.

`serve --bus … --islands a,b` claims `burstmarket:lease:a` and `…:b` before it opens its store
(SET NX PX, through the redis package's Lock): a second process claiming an island that is held
refuses to start, naming the island and when the lease lapses. The owner renews its leases every
third of their life. An owner that dies stops renewing; once the lease has lapsed, another
process configured for the island (on the owner's data directory, shared storage) can start and
take over (docs/beyond-one-machine.md).

While Redis is away the owner keeps ticking (the store is the truth) and renews as soon as Redis
answers again; a lease gone meanwhile (Redis restarted empty) is claimed again. A lease another
process holds by then means this process has lost the island: it stops (`lost` is called), so an
island is never ticked by two processes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Callable, Iterable

import redis
from redis.exceptions import LockNotOwnedError, RedisError
from redis.lock import Lock

from burstmarket.feed.bus import CONNECT_SECONDS

log = logging.getLogger(__name__)

PREFIX = "burstmarket:lease:"


class LeaseUnavailable(Exception):
    """An island this process was to run is held by another one, or the bus does not answer:
    one line for the operator."""


class Leases:
    def __init__(self, url: str, islands: Iterable[str], seconds: float, owner: str) -> None:
        self.seconds = seconds
        self._owner = owner
        self._redis = redis.Redis.from_url(
            url, socket_connect_timeout=CONNECT_SECONDS, socket_timeout=CONNECT_SECONDS
        )
        self._locks = {
            island: Lock(
                self._redis, PREFIX + island, timeout=seconds, blocking=False, thread_local=False
            )
            for island in islands
        }
        self._away = False

    @staticmethod
    def owner_name(port: int, data_dir: str) -> str:
        """Who holds a lease, as the refusal of a second process names it."""
        return f"{socket.gethostname()} pid {os.getpid()} port {port} data dir {data_dir}"

    def claim(self) -> None:
        """Take every island's lease, or none: LeaseUnavailable naming the first one held
        elsewhere, or saying that Redis does not answer (no lease, no start)."""
        try:
            self._claim()
        except RedisError as exc:
            self._redis.close()
            raise LeaseUnavailable(
                f"cannot claim the islands' leases: the bus does not answer ({exc})"
            ) from None

    def _claim(self) -> None:
        taken: list[Lock] = []
        for island, lock in self._locks.items():
            if not lock.acquire(token=self._owner):
                holder = self._redis.get(lock.name)
                left = self._redis.pttl(lock.name)
                for done in taken:
                    done.release()
                who = holder.decode(errors="replace") if isinstance(holder, bytes) else "?"
                self._redis.close()
                raise LeaseUnavailable(
                    f"island {island} is run by another process ({who}); its lease lapses "
                    f"within {max(left, 0) / 1000:.1f} s unless that process renews it"
                )
            taken.append(lock)

    def renew(self, lost: Callable[[str], None]) -> None:
        """Renew every lease (blocking: run it in a worker thread); `lost(island)` for one that
        another process holds now."""
        try:
            for island, lock in self._locks.items():
                try:
                    lock.reacquire()
                except LockNotOwnedError:
                    if not lock.acquire(token=self._owner):  # gone, and another took it
                        lost(island)
        except RedisError as exc:
            if not self._away:
                log.warning(
                    "leases: Redis does not answer (%s); ticking goes on, the leases "
                    "are renewed when it is back",
                    exc,
                )
            self._away = True
            return
        if self._away:
            log.info("leases: Redis answers again; leases renewed")
        self._away = False

    def release(self) -> None:
        """Give the leases up at a clean stop, so a successor need not wait for them to lapse."""
        for lock in self._locks.values():
            with contextlib.suppress(RedisError):  # else it lapses by itself
                lock.release()
        self._redis.close()
