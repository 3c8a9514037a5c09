"""The two small programs of the core rule, handed to HiGHS (its LP simplex and QP active set)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from highspy import HessianFormat, HighsHessian, HighsLp, HighsModel, MatrixFormat, kHighsInf

# highspy.Highs() prints a banner on stdout, which `burstmarket clear` keeps for its JSON; the
# wrapped solver class is the same solver without the callback plumbing that prints it.
from highspy._core import _Highs

Floats = npt.NDArray[np.float64]


class SolverError(RuntimeError):
    """HiGHS did not reach an optimum on a program that always has one: a bug, never input."""


def solve(
    lower: Floats,
    upper: Floats,
    rows: Sequence[Sequence[int]],
    row_lower: Sequence[float],
    *,
    linear: Floats,
    quadratic: bool = False,
    revenue_at_most: float | None = None,
) -> Floats:
    """min linear·x (+ Σ x² when `quadratic`) s.t. Σ_{j∈row} x_j ≥ bound, lower ≤ x ≤ upper,
    and Σ x ≤ revenue_at_most when given."""
    n = len(lower)
    all_rows = [list(r) for r in rows]
    lows = list(row_lower)
    uppers = [kHighsInf] * len(lows)
    if revenue_at_most is not None:
        all_rows.append(list(range(n)))
        lows.append(-kHighsInf)
        uppers.append(revenue_at_most + 1e-9)
    lp = HighsLp()
    lp.num_col_ = n
    lp.num_row_ = len(all_rows)
    lp.col_cost_ = np.asarray(linear, dtype=np.float64)
    lp.col_lower_ = np.asarray(lower, dtype=np.float64)
    lp.col_upper_ = np.asarray(upper, dtype=np.float64)
    lp.row_lower_ = np.asarray(lows, dtype=np.float64)
    lp.row_upper_ = np.asarray(uppers, dtype=np.float64)
    starts = np.cumsum([0] + [len(r) for r in all_rows]).astype(np.int32)
    lp.a_matrix_.format_ = MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = n
    lp.a_matrix_.num_row_ = len(all_rows)
    lp.a_matrix_.start_ = starts
    lp.a_matrix_.index_ = np.asarray([j for r in all_rows for j in r], dtype=np.int32)
    lp.a_matrix_.value_ = np.ones(int(starts[-1]), dtype=np.float64)
    model = HighsModel()
    model.lp_ = lp
    if quadratic:
        hessian = HighsHessian()
        hessian.dim_ = n
        hessian.format_ = HessianFormat.kTriangular
        hessian.start_ = np.arange(n + 1, dtype=np.int32)
        hessian.index_ = np.arange(n, dtype=np.int32)
        hessian.value_ = np.full(n, 2.0)
        model.hessian_ = hessian
    highs = _Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("primal_feasibility_tolerance", 1e-9)
    highs.setOptionValue("dual_feasibility_tolerance", 1e-9)
    highs.passModel(model)
    highs.run()
    status = highs.getModelStatus()
    if highs.modelStatusToString(status) != "Optimal":
        raise SolverError(f"HiGHS: {highs.modelStatusToString(status)}")
    return np.asarray(highs.getSolution().col_value, dtype=np.float64)
