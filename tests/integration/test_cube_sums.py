"""Published sums beside counts: a tiny release whose cube c3 (GEO.2 x SEX) publishes the perturbed sums of age.

The release is TINY_CONFIG plus c3 with ``sums: [age]``, the demo's magnitude perturbation of age
(``tests.tables_release.with_magnitudes``) and a ``tables`` section, published by the release table
itself. Checked: the published sums are cellKey's perturbation of the records' sums
(:func:`perturb_magnitudes`, rounded to the unit), nothing unprotected leaves, the exports carry
them, the service's mean x published count is the cube's sum, and the report shows their loss.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import xarray as xr

from cubeguard.ckm.magnitude import perturb_magnitudes, read_num_ptable, tabulate_magnitudes
from cubeguard.cubes.store import open_cube
from cubeguard.methods.cell_key.model import CellKeyStep
from cubeguard.pipeline.measure import measures_file
from cubeguard.pipeline.tabulate_parts import plan_parts, sum_parts, tabulate_part
from cubeguard.pipeline.tabulation import tabulate_release
from cubeguard.tables.engine import TableEngine
from cubeguard.tables.query import TableQuery
from cubeguard.tables.served import open_served
from tests.conftest import TINY_CONFIG, tiny_microdata
from tests.tables_release import RELEASE_ID, TABLES, publish

CONFIG = TINY_CONFIG.replace(
    "  - {id: hh, population: households, breakdowns: [GEO.2]}\n",
    "  - {id: hh, population: households, breakdowns: [GEO.2]}\n  - {id: c3, breakdowns: [GEO.2, SEX], sums: [age]}\n",
).replace("output: {folder: out}", "output: {folder: out, exports: [csv, parquet, sdmx-csv]}")
INPUTS = {"nz_key_sum.age", "max.age", "min.age", "top1.age", "top2.age"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TableEngine]:
    config = publish(tmp_path_factory.mktemp("sums"), TABLES, config=CONFIG)
    return config, open_served(config)


def _published(engine: TableEngine) -> Path:
    return engine.release.config.output.folder / "published" / RELEASE_ID


def _ancestors(cube: xr.Dataset, dim: str) -> dict[str, list[int]]:
    """Each code of ``dim`` with the positions of itself and its ancestors."""
    codes = [str(c) for c in cube[dim].values]
    parents = [str(p) for p in cube[f"{dim}.parent"].values]
    out = {}
    for i, code in enumerate(codes):
        chain, j = [], i
        while True:
            chain.append(j)
            if not parents[j]:
                break
            j = codes.index(parents[j])
        out[code] = chain
    return out


def test_published_sums_are_the_perturbation_of_the_records_sums(served: tuple[Path, TableEngine]) -> None:
    _, engine = served
    cube = open_cube(_published(engine) / "store.zarr", "c3").load()
    assert set(cube.data_vars) == {"count", "sum.age"}
    data = tiny_microdata()
    geo, sex = _ancestors(cube, "GEO.2"), _ancestors(cube, "SEX")
    n_sex = cube.sizes["SEX"]
    members = np.array(
        [[g * n_sex + s for g in geo[r] for s in sex[x]] for r, x in zip(data.region, data.sex, strict=True)]
    )
    cells = tabulate_magnitudes(members, cube["count"].size, data.age, data.rkey)
    step = engine.release.config.steps[0]
    assert isinstance(step, CellKeyStep)
    spec = step.magnitudes["age"]
    expected = np.round(perturb_magnitudes(cells, spec, read_num_ptable(spec.ptable_file)).perturbed / spec.unit)
    np.testing.assert_array_equal(cube["sum.age"].values.ravel(), expected * spec.unit)
    assert not np.array_equal(expected, cells.sums)  # the sums are perturbed
    original = open_cube(engine.release.config.output.original_store, "c3").load()
    np.testing.assert_array_equal(original["sum.age"].values.ravel(), cells.sums)  # exact, internal
    assert set(original.data_vars) >= INPUTS


def test_nothing_unprotected_is_published_and_cubes_without_sums_keep_their_count_only(
    served: tuple[Path, TableEngine],
) -> None:
    _, engine = served
    protected = open_cube(engine.release.config.output.protected_store, "c3")
    assert not INPUTS & set(protected.data_vars)
    published = _published(engine) / "store.zarr"
    assert set(open_cube(published, "c1").data_vars) == {"count"}
    names = {p.name for p in (published / "c3").iterdir()}
    assert not {n for n in names if n.split(".")[0] in {"key_sum", "noise", "nz_key_sum", "max", "min", "top1"}}


def test_exports_carry_the_sums_and_sdmx_csv_the_counts_only(served: tuple[Path, TableEngine]) -> None:
    _, engine = served
    exports = _published(engine) / "exports"
    cube = open_cube(_published(engine) / "store.zarr", "c3")
    csv = pd.read_csv(exports / "c3.csv", dtype={"GEO.2": str, "SEX": str})
    assert list(csv.columns) == ["GEO.2", "SEX", "count", "sum.age"]
    np.testing.assert_array_equal(csv["sum.age"].to_numpy(), cube["sum.age"].values.ravel())
    parquet = pq.read_table(exports / "c3.parquet")
    assert parquet.column_names == ["GEO.2", "SEX", "count", "sum.age"]
    sdmx = next(p for p in exports.iterdir() if "c3" in p.name and p.suffix == ".csv" and p.name != "c3.csv")
    assert "sum" not in sdmx.read_text().splitlines()[0]
    package = json.loads((exports / "datapackage.json").read_text())
    fields = next(r for r in package["resources"] if r["path"] == "c3.csv")["schema"]["fields"]
    assert [f["name"] for f in fields] == list(csv.columns)
    assert fields[-1]["type"] == "number"


def test_a_cell_shared_with_a_flexible_table_has_the_published_sum(served: tuple[Path, TableEngine]) -> None:
    """The service's mean is the cube's published sum over its published count (to the mean's decimals), totals too."""
    _, engine = served
    cube = open_cube(_published(engine) / "store.zarr", "c3").load()
    table = engine.tabulate(TableQuery(breakdowns=["GEO.2", "SEX"], mean="age"))
    np.testing.assert_array_equal(table["count"].values, cube["count"].values)
    n_hat = cube["count"].values
    assert (n_hat > 0).all()
    sums = cube["sum.age"].values
    np.testing.assert_array_equal(table["mean"].values, np.round(sums / n_hat, 1))  # tables.means.age.decimals: 1
    one_sex = engine.tabulate(TableQuery(breakdowns=["SEX"], filters={"GEO.2": "A2"}, mean="age"))
    a2 = cube.sel({"GEO.2": "A2"})
    np.testing.assert_array_equal(one_sex["mean"].values, np.round(a2["sum.age"].values / a2["count"].values, 1))


def test_the_measures_hold_the_loss_of_sums_and_means(served: tuple[Path, TableEngine]) -> None:
    _, engine = served
    measures = pd.read_parquet(measures_file(engine.release))
    row = measures.loc["c3"]
    assert 0 < row["sum_mean_rel_dev@sum.age"] <= row["sum_max_rel_dev@sum.age"]
    assert 0 < row["mean_mean_rel_dev@sum.age"] <= row["mean_max_rel_dev@sum.age"]
    assert 0 <= row["mean_moved_share@sum.age"] <= 1
    assert np.isnan(measures.loc["c1"]["sum_mean_rel_dev@sum.age"])
    report = (engine.release.config.output.folder / "report" / "report.html").read_text()
    assert "Sums and means" in report
    assert not (_published(engine) / "measures.parquet").exists()


def test_parts_saved_and_summed_give_the_single_pass_inputs(served: tuple[Path, TableEngine]) -> None:
    """What Dask workers do: each row-group partition to disk (with its sums' inputs), then one merge."""
    _, engine = served
    release = engine.release
    parts = plan_parts(release, 3)
    assert len(parts) == 3
    merged = sum_parts(release, [tabulate_part(release, k, part) for k, part in enumerate(parts)])
    whole = tabulate_release(release)
    assert list(whole.values) == [(3, "age")]
    for name, array in whole.values[(3, "age")].items():
        np.testing.assert_array_equal(merged.values[(3, "age")][name], array, err_msg=name)
