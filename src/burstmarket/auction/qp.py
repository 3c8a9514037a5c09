"""The two small programs of the core rule, over classes of interchangeable winners: the minimum
revenue (an LP, HiGHS' simplex) and the point nearest VCG on it (a strictly convex QP,
Goldfarb–Idnani's dual active set in quadprog, which stays exact on the degenerate faces where
HiGHS' primal QP method gives up).

Both take the rows densely, `matrix @ x >= need`, with 0 <= x <= upper: a class count per row.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import quadprog

# highspy.Highs() prints a banner on stdout, which `burstmarket clear` keeps for its JSON; the
# wrapped solver class is the same solver without the callback plumbing that prints it.
from highspy._core import _Highs

Floats = npt.NDArray[np.float64]


class SolverError(RuntimeError):
    """A solver failed on a program that always has an optimum: a bug, never input."""


class LeastRevenue:
    """min weights·x s.t. rows·x >= need and 0 <= x <= upper, kept in one HiGHS model: rows come
    in as they are found and each solve starts from the last basis (dual simplex)."""

    def __init__(self, weights: Floats, upper: Floats) -> None:
        highs = _Highs()
        highs.setOptionValue("output_flag", False)
        highs.setOptionValue("primal_feasibility_tolerance", 1e-10)
        columns = len(weights)
        highs.addVars(columns, np.zeros(columns), upper)
        highs.changeColsCost(columns, np.arange(columns, dtype=np.int32), weights)
        self.highs = highs

    def add(self, rows: Floats, need: Floats) -> None:
        """New rows (dense, one per row of `rows`)."""
        row_of, column_of = np.nonzero(rows)
        starts = np.searchsorted(row_of, np.arange(len(rows))).astype(np.int32)
        self.highs.addRows(
            len(rows),
            need,
            np.full(len(rows), np.inf),
            len(row_of),
            starts,
            column_of.astype(np.int32),
            rows[row_of, column_of],
        )

    def raise_need(self, row: int, need: float) -> None:
        self.highs.changeRowBounds(row, need, np.inf)

    def solve(self) -> Floats:
        self.highs.run()
        status = self.highs.modelStatusToString(self.highs.getModelStatus())
        if status != "Optimal":
            raise SolverError(f"HiGHS: {status}")
        return np.asarray(self.highs.getSolution().col_value, dtype=np.float64)


def nearest(weights: Floats, upper: Floats, matrix: Floats, need: Floats, total: float) -> Floats:
    """min Σ weights·x² s.t. matrix·x >= need, weights·x <= total and 0 <= x <= upper."""
    columns = len(weights)
    identity = np.eye(columns)
    # quadprog: min ½xᵀGx − aᵀx s.t. Cᵀx ≥ b
    constraints = np.vstack([matrix, -weights[None, :], identity, -identity]).T
    bounds = np.concatenate([need, [-total], np.zeros(columns), -upper])
    try:
        x = quadprog.solve_qp(2.0 * np.diag(weights), np.zeros(columns), constraints, bounds, 0)[0]
    except ValueError as exc:
        raise SolverError(f"quadprog: {exc}") from None
    return np.asarray(x, dtype=np.float64)
