"""The strategy that bids what a cluster bid in the record: after each tick, the declaration its
recorded requests up to that market time leave standing, wherever it asked something since the
last tick (None elsewhere). A backtest of it in the cluster's own place re-runs the record as
it was (docs/analysts.md "Identity")."""

from __future__ import annotations

import bisect
import dataclasses
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from burstmarket.clock import from_datetime
from burstmarket.record import recorded
from burstmarket.record.strategy import Bid, JobBid, K8sBid, Own, Strategy, Tick, VmBid


def own_bids(history: Path, cluster: str) -> Strategy:
    """Read the cluster's declaring requests from the history at `history` once."""
    record = recorded.read(history)
    asked = [r for r in record.requests if r.cluster == cluster and r.declares()]
    ticks = sorted(record.ticks)
    vm: dict[str, Any] | None = None
    limit: Decimal | None = None
    jobs: dict[str, JobBid] = {}
    done = 0

    def decide(tick: Tick, own: Own) -> Bid | None:
        nonlocal vm, limit, done
        # what it asked after this tick and before its island's next one
        now = from_datetime(tick.time)
        after = bisect.bisect_right(ticks, (now, tick.island))
        later = (t for t, island in ticks[after:] if island == tick.island)
        until = next(later, None)
        first = done
        while done < len(asked) and (until is None or asked[done].time < until):
            request, body = asked[done], _body(asked[done])
            done += 1
            name = request.path.rpartition("/")[2]
            if request.path == "/api/vm/capacity":
                vm = body
            elif request.path == "/api/k8s/bid":
                limit = _price(body["limit_price_per_gpu_hour"])
            elif request.method == "POST":
                jobs[body["name"]] = JobBid(
                    body["name"],
                    body.get("nodes"),
                    body.get("pods"),
                    body.get("gpus_per_pod"),
                    _price(body.get("limit_price_per_gpu_hour")),
                    body.get("priority_class"),
                )
            elif request.method == "PATCH":
                changed = jobs[name]
                if "limit_price_per_gpu_hour" in body:
                    price = _price(body["limit_price_per_gpu_hour"])
                    changed = dataclasses.replace(changed, price=price)
                if "priority_class" in body:
                    changed = dataclasses.replace(changed, priority_class=body["priority_class"])
                jobs[name] = changed
            elif request.method == "DELETE":
                jobs.pop(name, None)
        if not any(request.time >= now for request in asked[first:done]):
            return None  # it asked nothing after this tick
        if own.kind == "vm":
            assert vm is not None
            nodes = vm["max_gpus"] // own.gpus_per_node
            release = tuple(vm.get("release") or ())
            return VmBid(nodes, _price(vm.get("max_price_per_gpu_hour")), release)
        return K8sBid(limit, tuple(jobs.values()))

    return decide


def _body(request: recorded.Request) -> dict[str, Any]:
    if not request.body:
        return {}
    decoded = json.loads(request.body, parse_float=Decimal)  # prices exact, as sent
    return decoded if isinstance(decoded, dict) else {}


def _price(value: object) -> Decimal | None:
    return None if value is None else Decimal(str(value))
