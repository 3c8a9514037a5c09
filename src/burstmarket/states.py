"""The states the market's rows take, as Literals the type checker follows.

The store holds them as text, the API shows them as they are (contract.py) and the market sets
and compares them (market/): a misspelt state is a type error, not a row no query finds.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["vm", "k8s"]
"""A cluster's kind: VM capacity or a Kubernetes cluster."""
JobState = Literal["pending", "running", "finished"]
BlockState = Literal["live", "ended", "cancelled"]
"""A base load block's: in its term, past it, or cancelled (docs/market.md "Base load")."""
OutOfService = Literal["cordoned", "dark"]
"""Why a node is out of service, as the operator set it (docs/market.md "Nodes out of service")."""
NodeState = Literal["free", "held", "base_load", "cordoned", "dark"]
"""A node as the operator's node list shows it."""
PendingReason = Literal["spend-limit", "billing-hold"]
"""Why a cluster's demand is held back (also the refusal codes it is logged with)."""
BillingKind = Literal["market", "base_load"]
"""A billing row's: bought in the market or a base load block."""
LedgerKind = Literal[
    "deposit", "charge", "refund", "hold", "base_load", "commitment", "release"
]
"""A ledger row's (docs/market.md "Billing", "Spend guard"): money in, billed time, and the
spend guard's commitments and their releases."""
AllocationKind = Literal["market", "protected", "base_load"]
"""How a cluster holds a node at a tick: won or kept in the auction, under an open window or
owed, or by its base load block."""
