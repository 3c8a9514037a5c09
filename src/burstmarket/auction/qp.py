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
from highspy import HighsLp, HighsModel, MatrixFormat

# highspy.Highs() prints a banner on stdout, which `burstmarket clear` keeps for its JSON; the
# wrapped solver class is the same solver without the callback plumbing that prints it.
from highspy._core import _Highs

Floats = npt.NDArray[np.float64]


class SolverError(RuntimeError):
    """A solver failed on a program that always has an optimum: a bug, never input."""


def least_revenue(weights: Floats, upper: Floats, matrix: Floats, need: Floats) -> Floats:
    """min weights·x s.t. matrix·x >= need and 0 <= x <= upper."""
    rows, columns = matrix.shape
    lp = HighsLp()
    lp.num_col_ = columns
    lp.num_row_ = rows
    lp.col_cost_ = weights
    lp.col_lower_ = np.zeros(columns)
    lp.col_upper_ = upper
    lp.row_lower_ = need
    lp.row_upper_ = np.full(rows, np.inf)
    row_of, column_of = np.nonzero(matrix)  # row-major: the rows' entries in order
    lp.a_matrix_.format_ = MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = columns
    lp.a_matrix_.num_row_ = rows
    lp.a_matrix_.start_ = np.searchsorted(row_of, np.arange(rows + 1)).astype(np.int32)
    lp.a_matrix_.index_ = column_of.astype(np.int32)
    lp.a_matrix_.value_ = matrix[row_of, column_of]
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


def nearest(
    weights: Floats, upper: Floats, matrix: Floats, need: Floats, total: float
) -> Floats:
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
