"""The walk of the take-bits (allocation.Optima.decide) on tables several 64-bit words wide: the
probes walk together as one mask over rooms (kernels.walk_bits), shifted by whole words and by
parts of one; each probe's verdict must be what two separate walks say, the probe's own and the
main one, compared at the first unit where they differ."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from burstmarket.auction.allocation import optima
from tests.conftest import examples


@st.composite
def tables(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    """Units oldest first: many single nodes and gangs up to twice a word (a shift by a whole
    word and a part), values from a few per-node prices so that ties are common."""
    count = draw(st.integers(1, 120))
    sizes = draw(
        st.lists(
            st.sampled_from([1, 1, 1, 2, 3, 8, 63, 64, 65, 130]), min_size=count, max_size=count
        )
    )
    per_node = draw(st.lists(st.sampled_from([1, 2, 3, 5]), min_size=count, max_size=count))
    supply = draw(st.integers(60, 400))
    return (
        np.array(sizes, dtype=np.int64),
        np.array(sizes, dtype=np.int64) * np.array(per_node, dtype=np.int64) * 8,
        supply,
    )


@settings(max_examples=examples(150), deadline=None)
@given(tables())
def test_every_probe_leaves_where_its_own_walk_first_differs(
    table: tuple[np.ndarray, np.ndarray, int],
) -> None:
    sizes, values, supply = table
    found = optima(sizes, values, supply)
    probes = list(range(supply + 1))
    walked = found.decide(supply, probes)
    main = found.decide(supply, []).chosen.tolist()
    assert walked.chosen.tolist() == main
    for at in probes:
        own = found.decide(at, []).chosen.tolist()
        first = next((i for i, (a, b) in enumerate(zip(own, main, strict=True)) if a != b), None)
        assert walked.probe_wins[at] == (True if first is None else own[first]), at
