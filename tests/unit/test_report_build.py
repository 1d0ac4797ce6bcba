"""build_report on small stores written to a temporary folder: measures as measure_cubes gives them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cubeguard.cubes.store import open_cube, write_cube
from cubeguard.measures.table import MeasureSpec, measure_cubes
from cubeguard.report.build import build_report
from cubeguard.report.drilldown import drilldown_frame, measures
from cubeguard.report.errors import ReportError
from tests.strategies import build_cube, flat_tree, override


def _write_release(folder: Path, ids: list[str], protected_ids: list[str] | None = None) -> None:
    rng = np.random.default_rng(11)
    for k, cube_id in enumerate(ids):
        dims = {"GEO": flat_tree("T", "g1", "g2"), "AGE": flat_tree("T", "y", "o", "m")}
        original = build_cube(dims, rng.integers(0, 20 + 100 * k, (2, 3))).assign_attrs(cube_id=cube_id)
        noise = np.where(original["count"].values > 0, rng.integers(-2, 3, original["count"].shape), 0)
        protected = override(original, np.maximum(original["count"].values + noise, 0))
        protected = protected.assign(noise=protected["count"] - original["count"]).drop_vars("key_sum")
        write_cube(folder / "original.zarr", original)
        if protected_ids is None or cube_id in protected_ids:
            write_cube(folder / "protected.zarr", protected)


def test_report_holds_the_measures_of_every_cube(tmp_path: Path) -> None:
    _write_release(tmp_path, ["a", "b", "c"])
    spec = MeasureSpec(scopes=("interior", "cube"))
    path = build_report(tmp_path, spec, gates=[{"gate": "g", "passed": True}], batch_cells=30)
    assert path == tmp_path / "report" / "report.html"
    pairs = {c: (open_cube(tmp_path / "original.zarr", c), open_cube(tmp_path / "protected.zarr", c)) for c in "abc"}
    expected = measure_cubes(pairs, spec)
    back = pd.read_parquet(path.parent / "measures.parquet").set_index("cube")
    pd.testing.assert_frame_equal(back, expected)
    text = path.read_text(encoding="utf-8")
    assert "Protection report: " + tmp_path.name in text and "All 1 gate(s) passed." in text
    assert text.count("<img") == 3 * 3 + 3 + 1  # three cubes and the pooled programme, the drill-down heat-map
    assert text.count('<details class="drilldown"><summary>Cube ') == 3
    levels = pd.read_parquet(path.parent / "drilldown.parquet")
    pd.testing.assert_frame_equal(levels, measures(drilldown_frame(pairs)))  # batches of 30 cells: one cube each


def test_missing_stores_say_what_to_run(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"original\.zarr and .*protected\.zarr; run the release"):
        build_report(tmp_path)


def test_stores_with_different_cubes_are_refused(tmp_path: Path) -> None:
    _write_release(tmp_path, ["a", "b"], protected_ids=["a"])
    with pytest.raises(ReportError, match=r"only original: \['b'\].*run the protection step again"):
        build_report(tmp_path)


def test_cubes_that_cannot_be_measured_are_listed(tmp_path: Path) -> None:
    _write_release(tmp_path, ["a", "b"])
    with pytest.raises(ReportError, match=r"2 cube\(s\) could not be measured.*unknown dimension\(s\) \['SEX'\]"):
        build_report(tmp_path, MeasureSpec(scopes=(("SEX",),)))
    assert not (tmp_path / "report").exists()
