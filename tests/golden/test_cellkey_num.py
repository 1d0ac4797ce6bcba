"""The cell key method for magnitudes against R cellKey 1.0.2 (golden README ``cellkey_num``).

Every cell file and every steps file listed in ``index.csv`` is recomputed from
``microdata_20000_num.csv``, ``params.json`` and the p-tables, and every column cubeguard computes
is compared bit for bit (parsed with Python ``float``). Plain files run in cellKey-compatible
top-k mode (bug Q1), ``_topkfix`` files in the default mode. Cells are in cellKey's order, read
from the files (nested dimensions, each walked parent first).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from itertools import product
from pathlib import Path

import numpy as np
import pytest

from cubeguard.ckm.lookup import perturb_counts
from cubeguard.ckm.magnitude import (
    BRANCHES,
    MODES,
    TYPES,
    FlexParams,
    MagnitudeCells,
    MagnitudeParams,
    MagnitudeResult,
    NumPTable,
    SimpleParams,
    mean_before_sum,
    perturb_magnitudes,
    read_num_ptable,
    tabulate_magnitudes,
)
from cubeguard.ckm.ptable_io import read_ptable

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "golden" / "cellkey_num"
ANCESTORS: dict[str, Callable[[str], list[str]]] = {
    "district": lambda code: [code, code[:2], "Total"],
    "sex": lambda code: [code, "Total"],
    "age": lambda code: [code, "Total"],
}
TABLE_DIMS = {
    "N1_geo_x_sex": ["district", "sex"],
    "N2_geo_x_age": ["district", "age"],
    "N3_sex_x_age": ["sex", "age"],
    "N4_geo_x_sex_x_age": ["district", "sex", "age"],
}
RUNS = [  # golden README 3: income A/B on N1-N4, C/D on N4; balance A/C/E on N4, E on N1; topkfix variants
    *(f"{t}_income_{s}" for t in TABLE_DIMS for s in "AB"),
    "N4_geo_x_sex_x_age_income_C",
    "N4_geo_x_sex_x_age_income_D",
    *(f"N4_geo_x_sex_x_age_balance_{s}" for s in "ACE"),
    "N1_geo_x_sex_balance_E",
    *(f"{t}_income_A_topkfix" for t in TABLE_DIMS),
    "N4_geo_x_sex_x_age_income_C_topkfix",
    "N4_geo_x_sex_x_age_balance_C_topkfix",
    "N4_geo_x_sex_x_age_balance_E_topkfix",
]


def _rows(name: str) -> list[dict[str, str]]:
    with (GOLDEN / name).open(newline="") as handle:
        return list(csv.DictReader(handle))


@cache
def _microdata() -> list[dict[str, str]]:
    return _rows("microdata_20000_num.csv")


@dataclass
class Run:
    stem: str
    table: str
    var: str
    pset: str
    topkfix: bool
    cells: list[dict[str, str]]
    steps: list[dict[str, str]]
    tab: MagnitudeCells
    result: MagnitudeResult
    ptable: NumPTable


def _params(pset: str, topkfix: bool) -> tuple[MagnitudeParams, int | None]:
    p = json.loads((GOLDEN / "params.json").read_text())[pset]
    eps = tuple(p["epsilon"])
    mult: FlexParams | SimpleParams = (
        FlexParams(fp=p["fp"], p_small=p["p_small"], p_large=p["p_large"], q=p["q"], epsilon=eps)
        if p["mult"] == "flex"
        else SimpleParams(p=p["p"], epsilon=eps)
    )
    params = MagnitudeParams(
        type=p["type"], top_k=p["top_k"], mult=mult, mu_c=p["mu_c"], same_key=p["same_key"],
        use_zero_rkeys=p["use_zero_rkeys"], topk="correct" if topkfix else "cellkey_1_0_2",
    )  # fmt: skip
    return params, p["supp_freq_n"]


def _tabulate(dims: list[str], var: str, cells: list[dict[str, str]]) -> MagnitudeCells:
    """Records into every cell of the golden file (cells in the file's, i.e. cellKey's, order)."""
    index = {tuple(row[d] for d in dims): n for n, row in enumerate(cells)}
    micro = _microdata()
    members = [[index[c] for c in product(*(ANCESTORS[d](r[d]) for d in dims))] for r in micro]
    # cellKey's tie order: sdcTable's rawData, sorted by the dimension codes (C locale), then record order
    order = sorted(range(len(micro)), key=lambda n: (*(micro[n][d] for d in dims), n))
    ranks = np.empty(len(micro), dtype=np.int64)
    ranks[order] = np.arange(len(micro))
    values = [float(r[var]) for r in micro]
    keys = [float(r["rkey"]) for r in micro]
    return tabulate_magnitudes(np.array(members), len(cells), values, keys, ranks=ranks)


@cache
def _run(stem: str) -> Run:
    topkfix = stem.endswith("_topkfix")
    base = stem.removesuffix("_topkfix")
    table, var, pset = base.rsplit("_", 2)
    cells, steps = _rows(f"{stem}.csv"), _rows(f"{stem}_steps.csv")
    params, supp_n = _params(pset, topkfix)
    tab = _tabulate(TABLE_DIMS[table], var, cells)
    ptable = read_num_ptable(GOLDEN / f"ptab_used_{pset}.csv")
    sensitive = tab.counts <= supp_n if supp_n is not None else None
    result = perturb_magnitudes(tab, params, ptable, sensitive)
    return Run(stem, table, var, pset, topkfix, cells, steps, tab, result, ptable)


class Compare:
    """Counts compared values and collects mismatches (golden text vs our value)."""

    def __init__(self, stem: str) -> None:
        self.stem = stem
        self.compared = 0
        self.mismatches: list[str] = []

    def __call__(self, where: str, column: str, golden: str, ours: object) -> None:
        self.compared += 1
        if not _equal(golden, ours):
            self.mismatches.append(f"{self.stem} {where} {column}: golden {golden!r}, ours {ours!r}")

    def check(self) -> None:
        assert self.compared > 0
        assert not self.mismatches, f"{len(self.mismatches)} of {self.compared}: " + "; ".join(self.mismatches[:8])


def _equal(golden: str, ours: object) -> bool:
    if golden == "NA":
        return ours is None or (isinstance(ours, float) and np.isnan(ours))
    if golden in ("TRUE", "FALSE"):
        return isinstance(ours, bool | np.bool_) and bool(ours) == (golden == "TRUE")
    if isinstance(ours, str):
        return golden == ours
    value = float(golden)
    return isinstance(ours, int | float | np.integer | np.floating) and float(ours) == value


TOTALS = {"TRUE": True, "FALSE": False}
COMPARED: dict[str, int] = {}


def _fmt_bool(value: object) -> bool:
    return bool(value)


def _cell_values(run: Run, n: int) -> dict[str, object]:
    tab, res = run.tab, run.result
    k = res.keys.shape[1]
    stored = int(res.n_stored[n])
    last = 0 if res.returned_early[n] else int(res.n_used[n]) - 1
    sums = tab.sums
    values: dict[str, object] = {
        "count": int(tab.counts[n]),
        "sum": float(sums[n]),
        "perturbed": float(res.perturbed[n]),
        "pert": float(res.pert[n]),
        "sensitive": bool(res.mu[n] > 0) if run.pset == "C" else False,
        "cell_key": float(tab.keys[n]),
        "cell_key_nz": float(tab.keys_nz[n]),
        "n_records_even": bool(tab.counts[n] % 2 == 0),
        "ptable_type": TYPES[res.first_lookup[n]],
        "mean": float(tab.means[n]),
        "spread": float(tab.spreads[n]),
        "n_top_stored": stored,
        "n_used": int(res.n_used[n]),
        "x_used_1": float(res.x[n, 0]),
        "lookup_final": TYPES[res.lookup[n, last]],
        "perturbed_mbs": float(mean_before_sum(res.perturbed[n], sums[n])),
    }
    for i in range(6):
        values[f"top{i + 1}"] = float(tab.top[n, i]) if i < stored else None
    for i in range(k):
        values[f"ck_used_{i + 1}"] = float(res.keys[n, i])
    return values


@pytest.mark.parametrize("stem", RUNS)
def test_cell_file(stem: str) -> None:
    run = _run(stem)
    compare = Compare(stem)
    counts_ptable = read_ptable(GOLDEN / "ptable_cnt_D5_V3_js2.csv")
    perturbed_counts = perturb_counts(run.tab.counts, run.tab.keys, counts_ptable)
    for n, row in enumerate(run.cells):
        where = "/".join(row[d] for d in TABLE_DIMS[run.table])
        ours = _cell_values(run, n)
        ours["perturbed_count"] = int(perturbed_counts[n])
        for column, golden in row.items():
            if column in ours:
                compare(where, column, golden, ours[column])
    # every column but the codes and n_nonzero (not an input cubeguard keeps)
    assert set(run.cells[0]) - set(ours) == {*TABLE_DIMS[run.table], "n_nonzero"}
    COMPARED[f"{stem}.csv"] = compare.compared
    compare.check()


def _step_values(run: Run, n: int, j: int) -> dict[str, object]:
    res = run.result
    early = bool(res.returned_early[n])
    skipped = early or bool(res.zero_pert[n, j])
    kind = int(res.lookup[n, j])
    steps = {name: float(values[n, j]) for name, values in res.steps.items()}
    ours: dict[str, object] = {
        "x_j": float(res.x[n, j]),
        "ck_j": float(res.keys[n, j]),
        "branch": BRANCHES[res.branch[n, j]],
        "lookup_j": TYPES[kind],
        "rescaled": bool(res.rescaled[n, j]) if not early else False,
        "zero_pert": bool(res.zero_pert[n, j]) if not early else False,
        "x_delta": steps["x_delta"],
        "xo_before": steps["xo_before"],
        "x_hat": steps["x_hat"],
        "xo_after": steps["xo_after"],
    }
    if skipped:
        ours.update(dict.fromkeys(("a", "a_capped", "max_i", "lookup_mode", "lambda", "v", "mu"), None))
        ours.update(dict.fromkeys(("i_low", "i_up", "v_low", "v_up", "ptable_row_low", "ptable_row_up"), None))
        return ours
    rows = {"low": int(steps["row_low"]), "up": int(steps["row_up"])}
    ours.update(
        a=steps["a"], a_capped=steps["a_capped"], max_i=run.ptable.max_i(TYPES[kind]),
        lookup_mode=MODES[res.mode[n, j]], v=steps["v"], mu=float(res.mu[n]),
        v_low=steps["v_low"], v_up=steps["v_up"], **{"lambda": steps["lam"]},
    )  # fmt: skip
    for side, row in rows.items():
        ours[f"i_{side}"] = float(run.ptable.i[row]) if row >= 0 else None
        ours[f"ptable_row_{side}"] = row + 1 if row >= 0 else None
    return ours


@pytest.mark.parametrize("stem", RUNS)
def test_steps_file(stem: str) -> None:
    run = _run(stem)
    dims = TABLE_DIMS[run.table]
    index = {tuple(row[d] for d in dims): n for n, row in enumerate(run.cells)}
    compare = Compare(f"{stem}_steps")
    seen = []
    for row in run.steps:
        n, j = index[tuple(row[d] for d in dims)], int(row["j"]) - 1
        seen.append((n, j))
        ours = _step_values(run, n, j)
        where = "/".join(row[d] for d in dims) + f" j={j + 1}"
        for column, golden in row.items():
            if column in ours:
                compare(where, column, golden, ours[column])
    assert set(run.steps[0]) - set(ours) == {*dims, "j"}
    # one row per used component (one for a cell returned early), and no other
    expected = [
        (n, j)
        for n in range(len(run.cells))
        for j in range(1 if run.result.returned_early[n] else run.result.n_used[n])
    ]
    assert sorted(seen) == expected
    COMPARED[f"{stem}_steps.csv"] = compare.compared
    compare.check()


def test_index_lists_exactly_the_runs() -> None:
    listed = {row["file"].removesuffix(".csv") for row in _rows("index.csv")}
    assert listed == set(RUNS)
    steps = {row["steps_file"] for row in _rows("index.csv")}
    assert steps == {f"{stem}_steps.csv" for stem in RUNS}
