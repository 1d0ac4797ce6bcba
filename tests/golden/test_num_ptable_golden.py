"""create_num_ptable against the numeric p-tables of R ptable 1.0.0.9000 (golden README ``cellkey_num`` 3).

The five ``create_num_ptable`` calls of README section 3 (PT_A, PT_B, PT_SC, PT_EV, PT_OD) made the
rows of ``ptab_used_{A..E}.csv`` of the types that use them. The grid (``i``, ``j``, ``v``) must be
identical. Tolerance: as for counts (``test_ptable_golden.py``), the project requirement is 1e-7
on ``p`` (NLopt's ``xtol_rel``); the bounds are ptable's 8-decimal ``round(cumsum(p), 8)``, so
where ``p`` agrees to 8 decimals (|dp| < 5e-9) the bounds must be identical. Where ``long double``
is the x87 80-bit type of the build that made the goldens, all five tables are bit for bit equal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cubeguard.ckm.magnitude import NumPTable, read_num_ptable
from cubeguard.ckm.magnitude.ptable_create import create_num_ptable, num_ptable_params

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "golden" / "cellkey_num"
TOLERANCE = 1e-7  # on p: the project requirement; see the module docstring
PRINTED = 5e-9  # p agrees to the 8 decimals ptable rounds the bounds to
X87_LONG_DOUBLE = np.finfo(np.longdouble).nmant == 63  # R's LDOUBLE on x86-64

# (README 3 name, the ptab_used file and row type holding it, create_num_ptable's arguments)
CALLS = [
    ("PT_A", "A", "all", {"D": 10, "V": 3, "step": 2, "icat": (1, 5, 10), "optim": (4, 1, 1)}),
    ("PT_B", "C", "all", {"D": 6, "V": 2, "step": 4, "icat": (1, 3, 6)}),
    ("PT_SC", "B", "small_cells", {"D": 5, "V": 1, "step": 5, "icat": (1, 3, 5), "optim": (4, 1, 1)}),
    ("PT_EV", "D", "even", {"D": 8, "V": 1, "step": 2, "icat": (1, 5, 8), "type": "even"}),
    ("PT_OD", "D", "odd", {"D": 10, "V": 2, "step": 2, "icat": (1, 10), "optim": (4, 1), "type": "odd"}),
]
# the same tables are used again in other parameter sets: those copies must be equal too
ALSO_IN = {"PT_A": ["B", "E"], "PT_SC": ["C", "E"]}


def _golden_rows(file: str, kind: str) -> dict[str, np.ndarray]:
    table = read_num_ptable(GOLDEN / f"ptab_used_{file}.csv")
    rows = table.type == kind
    return {name: getattr(table, name)[rows] for name in ("i", "j", "p", "v", "lb", "ub")}


@pytest.fixture(scope="module")
def made() -> dict[str, NumPTable]:
    return {name: create_num_ptable(num_ptable_params(**kwargs)) for name, _, _, kwargs in CALLS}


@pytest.mark.parametrize(("name", "file", "kind", "kwargs"), CALLS, ids=[c[0] for c in CALLS])
def test_create_num_ptable_matches_r_ptable(
    made: dict[str, NumPTable], name: str, file: str, kind: str, kwargs: dict[str, object]
) -> None:
    ours = made[name]
    for where in [file, *ALSO_IN.get(name, [])]:
        golden = _golden_rows(where, kind)
        for column in ("i", "j", "v"):
            np.testing.assert_array_equal(getattr(ours, column), golden[column], err_msg=f"{name} {column}")
        dp = np.abs(ours.p - golden["p"])
        assert dp.max() <= TOLERANCE, f"{name}: max |dp| = {dp.max():g}"
        close = dp < PRINTED
        np.testing.assert_array_equal(ours.lb[close], golden["lb"][close])
        np.testing.assert_array_equal(ours.ub[close], golden["ub"][close])
        assert set(ours.types()) == {kwargs.get("type", "all")}
        if X87_LONG_DOUBLE:
            np.testing.assert_array_equal(ours.p, golden["p"])
            np.testing.assert_array_equal(ours.lb, golden["lb"])
