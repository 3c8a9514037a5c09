"""V(X, c̄): the best value over X nodes with one cluster's whole demand removed, for many c.

Clusters whose removal is never asked for go into one base table. The rest are put in a row;
the table without cluster i is then the prefix before i (base included) beside the suffix after
i, and V(X, c̄_i) is their max-plus combination at X alone. Each unit is added three times (two
for the checkpointed suffix, one for the prefix) instead of once per removed cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from burstmarket.auction.knapsack import Item, Table, add_group, combine_at, suffix_tables


def values_without(
    groups: Mapping[str, Sequence[Item]], queries: Mapping[str, Sequence[int]], base: Table
) -> dict[str, dict[int, int]]:
    """For each cluster in `queries`, V(X, without it) at each capacity X it asks for.

    `base` is the table over every unit of the clusters not in `queries`.
    """
    removed = sorted(queries)
    prefix = base
    _, walk = suffix_tables([groups.get(c, ()) for c in removed], len(base))
    result: dict[str, dict[int, int]] = {}
    for cluster, suffix in zip(removed, walk(), strict=True):
        result[cluster] = {x: combine_at(prefix, suffix, x) for x in queries[cluster]}
        prefix = add_group(prefix, groups.get(cluster, ()))
    return result
