"""The states the market's rows take, as Literals the type checker follows.

The store holds them as text, the API shows them as they are (contract.py) and the market sets
and compares them (market/): a misspelt state is a type error, not a row no query finds.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["vm", "k8s"]
"""A cluster's kind: VM capacity or a Kubernetes cluster."""
JobState = Literal["pending", "running", "finished"]
BlockState = Literal["live", "ended", "cancelled", "changed"]
"""A base load block's: in its term, past it, cancelled, or ended by a change of rate or size
that a new block continues (docs/market.md "Base load")."""
BlockOrigin = Literal["purchase", "account-team"]
"""How a block came to be: bought at a posted cell, or made by the operator directly."""
OfferState = Literal["available", "sold-out", "not-available"]
"""A base load offer cell's, as a tenant reads it (docs/market.md "Posted offers")."""
OutOfService = Literal["cordoned", "dark"]
"""Why a node is out of service, as the operator set it (docs/market.md "Nodes out of service")."""
NodeState = Literal["free", "held", "base_load", "cordoned", "dark"]
"""A node as the operator's node list shows it."""
HeldBack = Literal["spend-limit", "billing-hold"]
"""Why the tick holds a cluster's demand back (also the refusal codes it is logged with)."""
PendingReason = Literal[
    "billing-hold",
    "spend-limit",
    "bid-too-low",
    "PackingDisabled",
    "ReservedBusy",
    "ReservedTooSmall",
    "no-supply",
    "windows",
    "outbid",
]
"""Why demand waits, in the order the first that holds is named (docs/market.md "Why it
waits")."""
LadderReason = Literal["windows-hold"]
"""Why a public ladder rung cannot be contested now: protection windows hold its nodes until
its `contestable_at` (docs/api.md "Market data")."""
BillingKind = Literal["market", "base_load"]
"""A billing row's: bought in the market or a base load block."""
LedgerKind = Literal[
    "deposit",
    "charge",
    "refund",
    "hold",
    "base_load",
    "commitment",
    "release",
    "security_deposit",
    "deposit_return",
    "receivable",
    "wire",
]
"""A ledger row's (docs/market.md "Billing", "Spend guard", "Buying"): money in, billed time,
the spend guard's commitments and their releases, and a base load purchase's deposit, its
return, its receivable and the wires that settle it."""
AllocationKind = Literal["market", "protected", "base_load"]
"""How a cluster holds a node at a tick: won or kept in the auction, under an open window or
owed, or by its base load block."""
