"""SAFE as a pre_tabular step on the ESTP course data (configs/censusprotection-safe.yaml, 30,578 persons).

The release's own machinery reads, protects and tabulates; the checks are independent of SAFE's
code: every cell of the course cubes and of a crossing no table controls is 0 or at least 3,
records and keys are unchanged, the report has the paper's tables and no secret, and the seed
fixes the result.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from cubeguard.config import load_release
from cubeguard.config.load import Release
from cubeguard.pipeline.pretabular import apply_pre_tabular
from cubeguard.pipeline.tabulation import tabulate_release
from tests.course import course_config
from tests.hierarchies import tabulate_frame

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "external" / "censusprotection" / "test_data_10k_tau.csv.gz"
SEED = 918273645  # distinctive, so that a leak into a report would be found by a text search

pytestmark = pytest.mark.skipif(not DATA.exists(), reason="shared course data not present")


def _config(tmp: Path, seed: int = SEED) -> Path:
    return course_config(tmp, "censusprotection-safe", {"seed: 2011": f"seed: {seed}"})


@pytest.fixture(scope="module")
def protected(tmp_path_factory: pytest.TempPathFactory) -> tuple[Release, dict[str, object]]:
    release = load_release(_config(tmp_path_factory.mktemp("safe")))
    return release, apply_pre_tabular(release)


def test_every_cell_of_every_cube_is_0_or_at_least_3(protected) -> None:
    release, summary = protected
    tab = tabulate_release(release)
    for c, plan in enumerate(tab.plans):
        counts = tab.cube(c, {"cube_id": plan.cube_id})["count"].values
        assert not np.isin(counts, [1, 2]).any(), plan.cube_id
    assert summary["persons_swapped"][0] > 0


def test_a_crossing_no_table_controls_has_no_1_or_2_either(protected) -> None:
    release, _ = protected
    frame = pq.read_table(release.config.output.swapped_microdata).to_pandas()
    frame["rkey"] = 0.5
    bds = [release.breakdowns[b] for b in ("NUTS3", "SEX", "AGE.M", "HST", "POB.L", "COC.M")]
    counts = tabulate_frame(bds, frame, batch=10_000).cube(0, {"cube_id": "x"})["count"].values
    assert counts.sum() > 0 and not np.isin(counts, [1, 2]).any()


def test_records_and_keys_are_kept_and_the_report_has_the_papers_tables(protected) -> None:
    release, _ = protected
    after = pq.read_table(release.config.output.swapped_microdata).to_pandas()
    assert len(after) == 30_578
    report_path = release.config.output.internal / "safe_report.json"
    report = json.loads(report_path.read_text())
    assert report["records"] == 30_578 and report["unsafe_cells_before"] > 0
    assert report["deviations"]["max_by_dimension"]["1"] <= report["final_bounds"]["one"]
    assert report["schedule"][0]["model"] == 2
    assert str(SEED) not in report_path.read_text()
    text = report_path.with_suffix(".md").read_text()
    assert "| model | correction step | b (1-dim) | b (other) |" in text
    assert f"Final bounds {report['final_bounds']['one']} (one variable)" in text
    assert "| cell size | cells | max deviation |" in text and str(SEED) not in text


def test_the_seed_fixes_the_result(protected, tmp_path: Path) -> None:
    release, _ = protected
    first = pq.read_table(release.config.output.swapped_microdata)
    again = load_release(_config(tmp_path / "again"))
    apply_pre_tabular(again)
    assert pq.read_table(again.config.output.swapped_microdata).equals(first)
    other = load_release(_config(tmp_path / "other", seed=SEED + 1))
    apply_pre_tabular(other)
    assert not pq.read_table(other.config.output.swapped_microdata).equals(first)


def test_households_stay_whole_their_household_columns_one_value_each(protected) -> None:
    """NUTS3 is a household column: SAFE never moves one member of a household to another region."""
    release, _ = protected
    frame = pq.read_table(release.config.output.swapped_microdata).to_pandas()
    hid = release.config.input.household_id
    for column in release.config.input.household_columns:
        if column in frame:
            assert (frame.groupby(hid)[column].nunique() == 1).all(), column
