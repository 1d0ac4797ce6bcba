"""Targeted swapping as a pre-tabular step on the course data: invariants through the pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from cubeguard.config import load_release
from cubeguard.io.csv_input import iter_csv_batches
from cubeguard.pipeline.pretabular import apply_pre_tabular
from cubeguard.pipeline.tabulation import tabulate_release
from tests.course import course_config

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "external" / "censusprotection"
pytestmark = pytest.mark.skipif(not DATA.exists(), reason="shared course data not present")


def _config(tmp: Path, **changes: str) -> Path:
    """The shipped swap config, writing into ``tmp``, with step values replaced."""
    return course_config(
        tmp, "censusprotection-swap", {f"    {key}: ": f"    {key}: {value}  # was: " for key, value in changes.items()}
    )


@pytest.fixture(scope="module")
def swapped(tmp_path_factory: pytest.TempPathFactory):
    cfg = _config(tmp_path_factory.mktemp("swap"))
    release = load_release(cfg)
    summary = apply_pre_tabular(release)
    return release, summary


def _course_csv(path: Path):
    import pandas as pd

    return pd.concat([b.to_pandas().astype(str) for b in iter_csv_batches(path, delimiter=";")], ignore_index=True)


def _households_per_area(table, area: str) -> dict[str, int]:
    first = table.drop_duplicates("HID")
    return first[area].value_counts().to_dict()


def test_swap_moves_households_between_areas_keeping_area_household_counts(swapped) -> None:
    release, summary = swapped
    assert summary["steps"] == ["targeted_swap"] and summary["households_swapped"][0] > 0
    before = _course_csv(release.config.input.microdata)
    after = pq.read_table(release.config.output.swapped_microdata).to_pandas()
    assert len(after) == len(before) == 30578
    for area in ("NUTS1", "NUTS2", "NUTS3"):
        assert _households_per_area(before, area) == _households_per_area(after, area)
    moved = (before["NUTS2"].astype(str) != after["NUTS2"].astype(str)).to_numpy()
    assert moved.any()
    for col in ("SEX", "AGE.H", "COC.M", "POB.M", "EDU", "HID"):  # only geography moves
        assert (before[col].astype(str).to_numpy() == after[col].astype(str).to_numpy()).all()
    report = json.loads((release.config.output.internal / "targeted_swap_report.json").read_text())
    assert report["households_swapped"] == summary["households_swapped"][0]


def test_cubes_without_geography_are_unchanged_by_the_swap(swapped, tmp_path: Path) -> None:
    release, _ = swapped
    swapped_tab = tabulate_release(release)
    plain = load_release(_config(tmp_path))
    plain = type(plain)(
        plain.config.model_copy(update={"pre_tabular": []}), plain.path, plain.breakdowns, plain.config_hash
    )
    plain_tab = tabulate_release(plain)
    ids = [p.cube_id for p in swapped_tab.plans]
    c = ids.index("wide-2")  # SEX x AGE.M x EDU: no geography
    np.testing.assert_array_equal(swapped_tab.bottom(c)[0], plain_tab.bottom(c)[0])
    g = ids.index("course-1")  # involves NUTS3: changed by the swap
    assert not np.array_equal(swapped_tab.bottom(g)[0], plain_tab.bottom(g)[0])


def test_rate_zero_and_k_zero_give_the_microdata_back(tmp_path: Path) -> None:
    release = load_release(_config(tmp_path, swap_rate="0.0", k_anonymity="0"))
    apply_pre_tabular(release)
    before = _course_csv(release.config.input.microdata)
    after = pq.read_table(release.config.output.swapped_microdata).to_pandas()
    for col in before.columns:
        assert (before[col].astype(str).to_numpy() == after[col].astype(str).to_numpy()).all(), col
