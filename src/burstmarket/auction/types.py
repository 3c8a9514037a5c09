"""Plain values in and out of the auction. Money is integer µUSD; prices per GPU-hour."""

from __future__ import annotations

from dataclasses import dataclass, field

from burstmarket.money import round_div


@dataclass(frozen=True, slots=True)
class Unit:
    """One atomic demand unit: `nodes` whole nodes at `price` µUSD per GPU-hour, all or nothing."""

    id: str
    cluster: str
    nodes: int
    price: int
    since: int | float
    """Age order: smaller is older; equal `since` falls back to the order units were given."""


@dataclass(frozen=True, slots=True)
class Protected:
    """Nodes a cluster holds under an open protection window: fixed this tick, capped at a lock."""

    cluster: str
    nodes: int
    locked_price: int


@dataclass(frozen=True, slots=True)
class IslandInput:
    """One island's tick: contestable supply, price floor, demand, protected holdings."""

    nodes: int
    """Contestable supply S: nodes not fixed by a window, a base load block or a cordon."""
    gpus_per_node: int
    reserve_price: int
    units: tuple[Unit, ...] = ()
    protected: tuple[Protected, ...] = ()


@dataclass(frozen=True, slots=True)
class Level:
    """Demand of other clusters at one price level: `nodes` whole nodes at `price` µUSD per
    GPU-hour. Negative `nodes`: demand that holds nodes now and would give way."""

    price: int
    nodes: int


@dataclass(frozen=True, slots=True)
class Coalition:
    """A blocking coalition that raised core payments above VCG: the demand it would bring in
    (and the demand holding nodes now that would give way, negative), as price levels, and
    what it offers over the reserve, µUSD per hour: the least the winners it outbids pay
    together above the reserve (β_T in core.py)."""

    levels: tuple[Level, ...]
    value: int


@dataclass(frozen=True, slots=True)
class ClusterClearing:
    """What one cluster holds and pays this tick. Payments are µUSD per hour, reserve included."""

    won_nodes: int
    protected_nodes: int
    gpus: int
    vcg: int
    core: int
    protected: int
    displaced: tuple[Level, ...] = ()
    """The demand of others its won nodes keep out, V(S, c̄) − O_c as price levels (receipts)."""
    coalition: Coalition | None = None
    """The coalition that required `core` above `vcg`; None when the core added nothing."""
    protected_displaced: tuple[Level, ...] = ()
    """What its protected nodes keep out: V(S + P_c, c̄) − V(S, c̄) as price levels."""
    capped: bool = False
    """The protected part is the locked-price cap (or a fixed lock), not what they displace."""

    @property
    def nodes(self) -> int:
        return self.won_nodes + self.protected_nodes

    @property
    def payment(self) -> int:
        """µUSD per hour for everything the cluster holds in the market."""
        return self.core + self.protected

    @property
    def rate(self) -> int:
        """µUSD per GPU-hour, rounded half up to the µUSD (billing uses `payment`, exact)."""
        return round_div(self.payment, self.gpus)


@dataclass(frozen=True, slots=True)
class Rung:
    """Price to win `nodes` whole nodes now, as a new youngest atomic demand."""

    nodes: int
    gpus: int
    price: int


@dataclass(frozen=True, slots=True)
class Stats:
    """Market statistics over clusters holding market nodes (never base load)."""

    vwap: int | None
    min: int | None
    max: int | None
    gpus: int
    clusters: int


@dataclass(frozen=True, slots=True)
class Clearing:
    """The outcome of one island's auction."""

    winners: tuple[str, ...]
    """Winning unit ids, in the order the units were given."""
    clusters: dict[str, ClusterClearing] = field(default_factory=dict)
    """Every cluster holding market nodes (won or protected), by cluster id, sorted."""
    ladder: tuple[Rung, ...] = ()
    stats: Stats = field(default_factory=lambda: Stats(None, None, None, 0, 0))
    value: int = 0
    """Σ (p − r)·k·g over the winning units, µUSD per hour: the optimum."""
    bid_too_low: frozenset[str] = frozenset()
    """Clusters with a unit priced under the reserve (not in the auction at all)."""
    core_rounds: int = 0
    """Rounds the core payments took: payment points examined from VCG on, the last one blocked
    by no coalition (0: no winner, nothing to price)."""
    core_exact: bool = True
    """The core payments are the exact minimum-revenue core point nearest VCG (rounded up to
    whole µUSD): an exact separation found no coalition blocking it, and it is proven optimal
    (core.py)."""
