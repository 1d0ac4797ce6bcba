"""Flat exports (``cubeguard.cubes.export``): one row per cell, codes and published count only."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from cubeguard.cubes import export
from cubeguard.cubes.model import make_cube
from cubeguard.cubes.store import write_cube
from tests.hierarchies import breakdown_of


def _cube(tmp_path: Path) -> tuple[Path, object]:
    from cubeguard.cubes.spec import CodeSpec, VariableSpec

    def spec(name: str, tree: dict[str, list[str]]) -> VariableSpec:
        codes = [CodeSpec(code=name)] + [CodeSpec(code=c, parent=p) for p, kids in tree.items() for c in kids]
        return VariableSpec(column=name.lower(), codes=codes, breakdowns={f"{name}.ALL": {}})  # type: ignore[arg-type]

    bds = [
        breakdown_of(spec("GEO", {"GEO": ["G1", "G2"], "G1": ["G11", "G12"], "G2": ["G21"]}), "GEO"),
        breakdown_of(spec("SEX", {"SEX": ["1", "2"]}), "SEX"),
        breakdown_of(spec("AGE", {"AGE": ["A1", "A2", "A3", "A4"]}), "AGE"),
    ]
    shape = tuple(len(b.codes) for b in bds)
    counts = np.arange(np.prod(shape), dtype=np.int64).reshape(shape) * 7 % 23
    cube = make_cube(bds, counts, np.zeros(shape, dtype=np.uint64), {"cube_id": "c1"})
    store = tmp_path / "s.zarr"
    write_cube(store, cube[["count"]].assign_attrs(cube.attrs), 10)
    return store, cube


def _expected(cube: object) -> pd.DataFrame:
    counts = cube["count"]  # type: ignore[index]
    dims = list(counts.dims)
    rows = [
        (*codes, int(counts.sel(dict(zip(dims, codes, strict=True)))))
        for codes in itertools.product(*[list(counts[d].values) for d in dims])
    ]
    return pd.DataFrame(rows, columns=[*dims, "count"])


@pytest.mark.parametrize("block_cells", [1, 7, 2_000_000])
def test_exports_list_every_cell_once_in_cube_order(tmp_path: Path, monkeypatch, block_cells: int) -> None:
    monkeypatch.setattr(export, "BLOCK_CELLS", block_cells)
    store, cube = _cube(tmp_path)
    expected = _expected(cube)
    parquet = pd.read_parquet(export.export_cube(store, "c1", "parquet", tmp_path / "c1.parquet"))
    pd.testing.assert_frame_equal(parquet, expected, check_dtype=False)
    dims = list(expected.columns[:-1])
    assert all(parquet[d].map(type).eq(str).all() for d in dims)
    csv = pd.read_csv(export.export_cube(store, "c1", "csv", tmp_path / "c1.csv"), dtype=str)
    pd.testing.assert_frame_equal(csv.astype({"count": "int64"}), expected, check_dtype=False)


@pytest.mark.parametrize("block_cells", [7, 2_000_000])
def test_internal_exports_are_marked_as_each_format_allows(tmp_path: Path, monkeypatch, block_cells: int) -> None:
    monkeypatch.setattr(export, "BLOCK_CELLS", block_cells)
    store, cube = _cube(tmp_path)
    expected = _expected(cube)

    csv = export.export_cube(store, "c1", "csv", tmp_path / "c1.csv", internal=True)
    first = csv.read_text().splitlines()[0]
    assert first == "# INTERNAL - NOT FOR PUBLICATION: cube c1 of s.zarr, not a published release"
    rows = pd.read_csv(csv, dtype=str, skiprows=1)
    pd.testing.assert_frame_equal(rows.astype({"count": "int64"}), expected, check_dtype=False)

    parquet = export.export_cube(store, "c1", "parquet", tmp_path / "c1.parquet", internal=True)
    assert pq.read_metadata(parquet).metadata[b"cubeguard.status"] == b"INTERNAL - NOT FOR PUBLICATION"
    pd.testing.assert_frame_equal(pd.read_parquet(parquet), expected, check_dtype=False)


def test_published_exports_carry_no_internal_mark(tmp_path: Path) -> None:
    store, _ = _cube(tmp_path)
    csv = export.export_cube(store, "c1", "csv", tmp_path / "c1.csv")
    assert csv.read_text().startswith('"GEO.')  # the header comes first
    parquet = export.export_cube(store, "c1", "parquet", tmp_path / "c1.parquet")
    assert b"cubeguard.status" not in (pq.read_metadata(parquet).metadata or {})
