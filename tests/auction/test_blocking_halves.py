"""The core's exact separation split in two (core.py `_Separation._most_blocking`): the front
half (`kernels.most_blocking` of the first winners) and the back half (`kernels.blocking_back`
of the rest) run on two threads; joined, they must give the most blocking coalition's value the
whole pass gives, wherever the winners are split."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from burstmarket.auction import kernels
from burstmarket.auction.core import Winner, _Separation
from tests.conftest import examples


def inline(function: Any, *args: Any) -> Future[Any]:
    """A helper that runs the half at once, on this thread."""
    done: Future[Any] = Future()
    done.set_result(function(*args))
    return done


@st.composite
def separations(draw: st.DrawFn) -> tuple[_Separation, np.ndarray]:
    """Winners with a few units each (gangs and single nodes), losers' units, payment points
    anywhere between nothing kept and the whole bid kept."""
    capacity = draw(st.integers(1, 90))
    winners = []
    for _ in range(draw(st.integers(2, 9))):
        count = draw(st.integers(1, 4))
        sizes = draw(st.lists(st.sampled_from([1, 1, 2, 3, 8, 16]), min_size=count, max_size=count))
        prices = draw(st.lists(st.integers(1, 9), min_size=count, max_size=count))
        values = np.array(sizes, dtype=np.int64) * np.array(prices, dtype=np.int64) * 8
        won = draw(st.integers(0, sum(sizes)))
        winners.append(Winner(0, int(values.sum()), won, np.array(sizes, np.int64), values))
    losing = draw(st.lists(st.sampled_from([1, 2, 4, 8]), max_size=12))
    losers = np.zeros(capacity + 1, dtype=np.int64)
    kernels.add_items(losers, np.array(losing, np.int64), np.array(losing, np.int64) * 3 * 8)
    keeps = np.array([draw(st.integers(0, w.hi)) for w in winners], dtype=np.int64)
    return _Separation(winners, losers, 0, inline), keeps


@settings(max_examples=examples(200), deadline=None)
@given(separations())
def test_the_halves_joined_give_the_whole_pass_value_at_every_split(
    case: tuple[_Separation, np.ndarray],
) -> None:
    separation, keeps = case
    whole, _ = kernels.most_blocking(
        *separation._inputs(keeps), np.empty((0, 0), dtype=np.int16), len(keeps)
    )
    for half in range(1, len(keeps)):
        separation._half = half
        assert separation._most_blocking(keeps) == int(whole[-1]), half
