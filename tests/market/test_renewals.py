"""Commitment renewals in the pure tick: a node kept past its commitment commits its next hour,
or goes when the spend limit has no room for it, and its gang with it."""

from __future__ import annotations

import logging

import pytest

from burstmarket.clock import NS_PER_HOUR
from burstmarket.market.model import SPEND_LIMIT
from tests.constants import T0, USD
from tests.market.test_holds import job, k8s, nodes, run


def test_a_running_gang_whose_next_hour_does_not_fit_is_preempted_and_released(
    caplog: pytest.LogCaptureFixture,
) -> None:
    island = nodes(2)
    k = k8s("k", limit=2 * USD)
    jobs = [job("k", "train", 2)]
    run([k], island, T0, jobs)
    assert jobs[0].state == "running"
    assert all(n.cluster == "k" and n.commit_ends_at == T0 + 2 * NS_PER_HOUR for n in island)
    k.spend_limit = 10 * USD  # the next hour of one node is 2 USD x 8 GPUs = 16 USD
    with caplog.at_level(logging.WARNING, logger="burstmarket.refused"):
        out = run([k], island, T0 + 2 * NS_PER_HOUR, jobs)
    assert jobs[0].state == "pending"
    assert [(e.job, e.type, e.detail) for e in out.events] == [
        ("train", "Preempted", "spend limit: the next hour does not fit")
    ]
    assert all(n.cluster is None and n.commit_price is None for n in island)
    assert (k.id, SPEND_LIMIT) in out.verdicts
    refused = [r.getMessage() for r in caplog.records if r.name == "burstmarket.refused"]
    assert len(refused) == 1
    assert refused[0].startswith(f"REFUSED reason={SPEND_LIMIT} cluster=k node=i-n0")
