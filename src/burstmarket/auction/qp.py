"""The two small programs of the core rule: the minimum revenue (an LP, HiGHS' simplex) and the
point nearest VCG on it (a strictly convex QP, Goldfarb–Idnani's dual active set in quadprog,
which stays exact on the degenerate faces where HiGHS' primal QP method gives up)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import quadprog
from highspy import HighsLp, HighsModel, MatrixFormat

# highspy.Highs() prints a banner on stdout, which `burstmarket clear` keeps for its JSON; the
# wrapped solver class is the same solver without the callback plumbing that prints it.
from highspy._core import _Highs

Floats = npt.NDArray[np.float64]


class SolverError(RuntimeError):
    """A solver failed on a program that always has an optimum: a bug, never input."""


def minimize(
    lower: Floats,
    upper: Floats,
    rows: Sequence[Sequence[int]],
    row_lower: Floats,
    *,
    linear: Floats,
) -> Floats:
    """min linear·x s.t. Σ_{j∈row} x_j ≥ row_lower and lower ≤ x ≤ upper."""
    n = len(lower)
    lp = HighsLp()
    lp.num_col_ = n
    lp.num_row_ = len(rows)
    lp.col_cost_ = np.asarray(linear, dtype=np.float64)
    lp.col_lower_ = np.asarray(lower, dtype=np.float64)
    lp.col_upper_ = np.asarray(upper, dtype=np.float64)
    lp.row_lower_ = np.asarray(row_lower, dtype=np.float64)
    lp.row_upper_ = np.full(len(rows), np.inf)
    starts = np.cumsum([0] + [len(r) for r in rows]).astype(np.int32)
    lp.a_matrix_.format_ = MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = len(rows)
    lp.a_matrix_.start_ = starts
    lp.a_matrix_.index_ = np.asarray([j for r in rows for j in r], dtype=np.int32)
    lp.a_matrix_.value_ = np.ones(int(starts[-1]), dtype=np.float64)
    model = HighsModel()
    model.lp_ = lp
    highs = _Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("primal_feasibility_tolerance", 1e-10)
    highs.passModel(model)
    highs.run()
    status = highs.modelStatusToString(highs.getModelStatus())
    if status != "Optimal":
        raise SolverError(f"HiGHS: {status}")
    return np.asarray(highs.getSolution().col_value, dtype=np.float64)


def nearest_to_origin(
    lower: Floats, upper: Floats, rows: Sequence[Sequence[int]], row_lower: Floats, total: float
) -> Floats:
    """min Σ x² s.t. Σ_{j∈row} x_j ≥ row_lower, lower ≤ x ≤ upper and Σ x ≤ total."""
    n = len(lower)
    matrix = np.zeros((len(rows), n))
    for i, row in enumerate(rows):
        matrix[i, list(row)] = 1.0
    # quadprog: min ½xᵀGx − aᵀx s.t. Cᵀx ≥ b
    constraints = np.vstack([matrix, -np.ones((1, n)), np.eye(n), -np.eye(n)]).T
    bounds = np.concatenate([row_lower, [-total], lower, -upper])
    try:
        x = quadprog.solve_qp(2.0 * np.eye(n), np.zeros(n), constraints, bounds, 0)[0]
    except ValueError as exc:
        raise SolverError(f"quadprog: {exc}") from None
    return np.asarray(x, dtype=np.float64)
