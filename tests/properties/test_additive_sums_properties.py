"""The serving path of the additive magnitude types equals ``perturbed_sums`` rounded to the unit, bit for bit.

:class:`AdditiveSums` goes from counts, sums and record-key sums to published sums in one compiled
pass; the reference is what the cell key step did before for every cell it perturbs (cells with
records; all of them with ``topk: cellkey_1_0_2``): :func:`perturbed_sums` of
:func:`magnitude_cells`, then ``np.round(sum / unit) * unit`` (:mod:`cubeguard.methods.cell_key.method`).
Cells are random and adversarial: key sums whose cell keys are 0, below 1e-4 (R's scientific
notation), few-digit (0.5, 0.25, 0.1), 15-digit ties, just below 1; counts 0 and 1; whole sums of
either sign and 0; both key scales; flex and simple parameters, ``same_key``, ``use_zero_rkeys``,
``all``, ``small_cells`` and even/odd p-tables (the golden ones of cellKey).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cubeguard.ckm.keys import KeyScale
from cubeguard.ckm.magnitude import (
    FlexParams,
    MagnitudeCells,
    MagnitudeParams,
    NumPTable,
    SimpleParams,
    perturbed_sums,
    read_num_ptable,
)
from cubeguard.ckm.magnitude.additive import AdditiveSums
from cubeguard.cubes.values import magnitude_cells

GOLDEN = Path(__file__).resolve().parents[3] / "shared" / "golden" / "cellkey_num"
DEMO = Path(__file__).resolve().parents[2] / "configs" / "ptables" / "demo_age_num.csv"
# A: all; B: all and small_cells (separation); D: even/odd; the demo's age table
TABLES = {name: read_num_ptable(GOLDEN / f"ptab_used_{name}.csv") for name in "ABD"} | {"demo": read_num_ptable(DEMO)}
MULTS = [
    FlexParams(fp=1000, p_small=0.3, p_large=0.05, q=3),
    FlexParams(fp=50, p_small=0.25, p_large=0.05, q=2),
    SimpleParams(p=0.1),
]
params = st.builds(
    MagnitudeParams,
    type=st.sampled_from(["mean", "sum"]),
    mult=st.sampled_from(MULTS),
    same_key=st.booleans(),
    use_zero_rkeys=st.booleans(),
    topk=st.sampled_from(["correct", "cellkey_1_0_2"]),
)
scales = st.sampled_from([KeyScale(), KeyScale("decimal", 8), KeyScale("decimal", 3), KeyScale("decimal", 18)])
SPECIAL_KEYS = [0.5, 0.25, 0.125, 0.1, 0.01, 0.2, 0.75, 1e-3, 1e-4, 5e-5, 1e-7, 0.0, 1.0 - 2**-40]


@st.composite
def key_sums(draw: st.DrawFn, scale: KeyScale) -> int:
    """A record-key sum whose cell key is random, 0, tiny, few-digit, a 15-digit tie, or close to 1."""
    den = 2**64 if scale.kind == "binary" else 10**scale.digits
    kind = draw(st.sampled_from(["random", "special", "tiny", "tie", "wrapped"]))
    if kind == "random":
        return draw(st.integers(0, 2**64 - 1))
    if kind == "special":
        return min(round(draw(st.sampled_from(SPECIAL_KEYS)) * den), den - 1)
    if kind == "tiny":
        return draw(st.integers(1, max(1, den // 10**4)))
    if kind == "tie":
        return min(round(draw(st.integers(10**13, 10**15 - 1)) * 10 + 5) * den // 10**16, den - 1)
    return (draw(st.integers(0, 3)) * den + draw(st.integers(0, den - 1))) % 2**64  # sums of many keys wrap


@st.composite
def cells(draw: st.DrawFn, scale: KeyScale) -> dict[str, np.ndarray]:
    n = draw(st.integers(1, 40))
    counts = draw(st.lists(st.sampled_from([0, 1, 2, 3]) | st.integers(0, 10**4), min_size=n, max_size=n))
    sums = draw(st.lists(st.sampled_from([0, 1, -1, 2]) | st.integers(-(10**6), 10**6), min_size=n, max_size=n))
    keys = draw(st.lists(key_sums(scale), min_size=2 * n, max_size=2 * n))
    return {
        "counts": np.array(counts, dtype=np.int64),
        "sums": np.array(sums, dtype=np.float64),
        "key_sums": np.array(keys[:n], dtype=np.uint64),
        "nz_key_sums": np.array(keys[n:], dtype=np.uint64),
    }


def reference(values: dict[str, np.ndarray], p: MagnitudeParams, table: NumPTable, scale: KeyScale, unit: float):  # type: ignore[no-untyped-def]
    """What the cell key step published before: perturbed_sums of the perturbed cells, rounded to the unit."""
    n = values["counts"].size
    whole = magnitude_cells(values | {"high": np.zeros(n), "low": np.zeros(n), "top": np.full((n, 1), np.nan)}, scale)
    live = whole.counts > 0 if p.topk == "correct" else np.ones(n, dtype=bool)
    rows = MagnitudeCells(**{f: getattr(whole, f)[live] for f in MagnitudeCells.__dataclass_fields__})
    out = np.zeros(n)
    out[live] = perturbed_sums(rows, p, table)
    return np.round(out / unit) * unit


def published(path: AdditiveSums, values: dict[str, np.ndarray], scale: KeyScale) -> np.ndarray:
    return path.published(values["counts"], values["sums"], values["key_sums"], values["nz_key_sums"], scale)


@settings(max_examples=400, deadline=None)
@given(st.data(), params, st.sampled_from(sorted(TABLES)), scales, st.sampled_from([1.0, 5.0, 0.5]))
def test_the_serving_path_is_perturbed_sums_bit_for_bit(
    data: st.DataObject, p: MagnitudeParams, table: str, scale: KeyScale, unit: float
) -> None:
    values = data.draw(cells(scale))
    fast = published(AdditiveSums.of(p, TABLES[table], unit), values, scale)
    slow = reference(values, p, TABLES[table], scale, unit)
    differ = fast.view(np.int64) != slow.view(np.int64)
    shown = {k: v[differ].tolist() for k, v in values.items()}
    assert not differ.any(), f"{shown} give {fast[differ]}, not {slow[differ]}"


def test_a_large_random_table_is_perturbed_sums_bit_for_bit() -> None:
    """50,000 cells as a 4-way table's (about 40 % empty), every parameter set and table."""
    rng = np.random.default_rng(7)
    n = 50_000
    counts = rng.integers(0, 2, n) * rng.integers(1, 3000, n)
    values = {
        "counts": counts,
        "sums": np.where(counts > 0, counts * rng.integers(-5, 95, n), 0).astype(np.float64),
        "key_sums": rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True),
        "nz_key_sums": rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True),
    }
    for table in TABLES.values():
        for mult in MULTS:
            for same_key in (False, True):
                p = MagnitudeParams(type="mean", mult=mult, same_key=same_key)
                fast = published(AdditiveSums.of(p, table), values, KeyScale())
                slow = reference(values, p, table, KeyScale(), 1.0)
                np.testing.assert_array_equal(fast.view(np.int64), slow.view(np.int64))
