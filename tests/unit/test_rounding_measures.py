"""Rounding measures (Handbook on SDC v2, 5.5 and 5.5.1.2): hand-worked arrays, properties, the release report.

Base 3, original [4, 5, 0] published [3, 6, 3]: 4 -> 3 and 5 -> 6 go to their nearest multiple, 0 -> 3
does not and moves a whole base; the user's intervals are [1, 5], [4, 8], [1, 5] (width 4 each), and
the 0 lies outside its own.
"""

from __future__ import annotations

import doctest
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import cubeguard.measures.rounding as rounding_module
from cubeguard.config import load_release
from cubeguard.cubes.store import open_cube
from cubeguard.measures.errors import CubeMismatchError, MeasureConfigError
from cubeguard.measures.rounding import (
    RoundingMeasures,
    RoundingParams,
    beyond_one_base_share,
    existence_interval_contains_share,
    existence_interval_mean_width,
    existence_intervals,
    is_nearest_multiple,
    moved_beyond_nearest_share,
    rounding_measures,
)
from cubeguard.measures.table import ROUNDING_KEYS, MeasureSpec, measure_cube, measure_cubes
from cubeguard.methods.conventional_rounding import round_to_base
from cubeguard.pipeline.measure import rounding_params
from cubeguard.release.audit import Results
from cubeguard.release.run import PlainRunner, prepare, summary, walk
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import Services
from cubeguard.report.rounding import rounded_cubes
from cubeguard.report.summary_md import release_markdown
from expectations.release import gate_release
from schemas.validate import validate_release
from tests.conftest import CELL_KEY_STEP, TINY_CONFIG
from tests.strategies import build_cube, flat_tree, override

MEASURES = RoundingMeasures._fields


def test_doctests() -> None:
    assert doctest.testmod(rounding_module).failed == 0


def test_hand_worked_base_3() -> None:
    original, published, params = [4, 5, 0], [3, 6, 3], RoundingParams(base=3)
    assert moved_beyond_nearest_share(original, published, 3) == pytest.approx(1 / 3)
    assert beyond_one_base_share(original, published, 3) == pytest.approx(1 / 3)
    low, high = existence_intervals(published, params)
    assert low.tolist() == [1, 4, 1] and high.tolist() == [5, 8, 5]
    assert existence_interval_mean_width(published, params) == 4.0
    assert existence_interval_contains_share(original, published, params) == pytest.approx(2 / 3)
    assert tuple(rounding_measures(original, published, params)) == pytest.approx((1 / 3, 1 / 3, 4.0, 2 / 3))


def test_a_tie_may_go_either_way_and_a_whole_base_is_beyond() -> None:
    # base 2: 1 and 3 are halfway; 5 -> 2 moved 3 (beyond one base), 4 -> 6 moved exactly one base
    assert is_nearest_multiple([1, 1, 3, 3], [0, 2, 2, 4], 2).tolist() == [True] * 4
    assert moved_beyond_nearest_share([1, 3, 5, 4], [2, 2, 2, 6], 2) == 0.5
    assert beyond_one_base_share([1, 3, 5, 4], [2, 2, 2, 6], 2) == 0.5


def test_a_published_non_multiple_counts_as_moved() -> None:
    # small cell adjustment publishes counts of at least the base unchanged
    assert moved_beyond_nearest_share([4, 7, 0], [4, 7, 0], 3) == pytest.approx(2 / 3)
    assert beyond_one_base_share([4, 7, 0], [4, 7, 0], 3) == 0.0
    assert existence_interval_contains_share([4, 7, 0], [4, 7, 0], RoundingParams(base=3)) == 1.0


def test_intervals_with_more_steps_hold_a_count_published_below_the_reach() -> None:
    # controlled rounding, base 3, steps 2: 7 may be published as 3 (|3 - 7| = 4 < 6); the user infers
    # [0, 3 + 6 - 1] = [0, 8] for 3, not [0, 5], and [0, 5] for 0, [6, 16] for 12
    params = RoundingParams(base=3, steps=2)
    low, high = existence_intervals([3, 0, 12], params)
    assert low.tolist() == [0, 0, 7] and high.tolist() == [8, 5, 17]
    assert existence_interval_contains_share([7, 5, 7], [3, 0, 12], params) == 1.0
    assert existence_interval_mean_width([3, 0, 12], params) == pytest.approx((8 + 5 + 10) / 3)


def test_no_cells_give_nan() -> None:
    assert all(math.isnan(v) for v in rounding_measures([], [], RoundingParams(base=3)))


@pytest.mark.parametrize(("base", "steps"), [(0, 1), (3, 0)])
def test_a_base_or_steps_below_1_is_refused(base: int, steps: int) -> None:
    with pytest.raises(MeasureConfigError, match=r"need a base and steps of at least 1.*pass the rounding step"):
        RoundingParams(base=base, steps=steps)


def test_different_cells_are_refused() -> None:
    with pytest.raises(CubeMismatchError, match="original has 3 cells but published has 2"):
        rounding_measures([1, 2, 3], [3, 3], RoundingParams(base=3))


counts = hnp.arrays(np.int64, hnp.array_shapes(max_dims=3, max_side=6), elements=st.integers(0, 10**6))


@given(counts, st.integers(1, 50))
def test_conventional_rounding_moves_no_cell_beyond_its_nearest_multiple(original: np.ndarray, base: int) -> None:
    published = round_to_base(original, base)
    out = rounding_measures(original, published, RoundingParams(base=base))
    assert out.moved_beyond_nearest_share == 0.0
    assert out.existence_interval_contains_share == 1.0
    assert out.beyond_one_base_share == 0.0


@given(counts, st.integers(1, 50), st.integers(1, 4), st.data())
def test_every_count_within_the_reach_lies_in_its_interval(
    original: np.ndarray, base: int, steps: int, data: st.DataObject
) -> None:
    """Any multiple of the base less than steps * base from the count, never below 0: what controlled
    rounding publishes (and, with steps 1, random rounding of each cell on its own)."""
    j = data.draw(hnp.arrays(np.int64, original.shape, elements=st.integers(-(steps - 1), steps)))
    published = np.maximum(original // base + j, 0) * base
    too_far = np.abs(published - original) >= steps * base  # j = steps on a multiple of the base
    published = np.where(too_far, original // base * base, published)
    out = rounding_measures(original, published, RoundingParams(base, steps))
    assert out.existence_interval_contains_share == 1.0
    if steps == 1:
        assert out.beyond_one_base_share == 0.0


CUBE = build_cube({"A": flat_tree("T", "a1", "a2", "a3")}, np.array([4, 5, 0]))  # cells T, a1, a2, a3: 9, 4, 5, 0
ROUNDED = override(CUBE, np.array([9, 3, 6, 3]))


def test_measure_cube_adds_the_rounding_keys_only_when_given_a_rounding() -> None:
    spec = MeasureSpec(measures=("rad",))
    plain = measure_cube(CUBE, ROUNDED, spec)
    assert not any(k.partition("@")[0] in ROUNDING_KEYS for k in plain)
    rounded = measure_cube(CUBE, ROUNDED, spec, RoundingParams(base=3))
    assert {k: v for k, v in rounded.items() if k not in plain} == {
        "moved_beyond_nearest_share@cube": 0.25,
        "beyond_one_base_share@cube": 0.25,
        "existence_interval_mean_width@cube": 4.0,
        "existence_interval_contains_share@cube": 0.75,
        "rounding_base@cube": 3.0,
        "rounding_steps@cube": 1.0,
    }


def test_measure_cubes_leaves_cubes_without_a_rounding_empty() -> None:
    table = measure_cubes(
        {"r": (CUBE, ROUNDED), "p": (CUBE, ROUNDED)}, MeasureSpec(measures=("rad",)), rounded={"r": RoundingParams(3)}
    )
    assert table.at["r", "moved_beyond_nearest_share@cube"] == 0.25
    assert table.loc["p", [f"{k}@cube" for k in ROUNDING_KEYS]].isna().all()  # no measure, not zeros
    (only,) = rounded_cubes(table)
    assert (only.cube, only.base, only.steps) == ("r", 3, 1)
    assert only.values["value"].tolist() == [0.25, 0.25, 4.0, 0.75]


MIXED_STEPS = (
    "  - {method: semi_controlled_rounding, base: 3, control: [GEO.1], cubes: [c1]}\n"
    "  - {method: controlled_rounding, base: 3, steps: 2, cubes: [c2]}\n"
    "  - {method: cell_key, D: 5, V: 3, js: 2, cubes: [hh]}\n"
)


def _config(folder: Path, steps: str) -> Path:
    path = folder / "tiny.yaml"
    path.write_text(TINY_CONFIG.replace(CELL_KEY_STEP, steps))
    return path


def test_rounding_params_come_from_the_last_protection_step_public_parameters(tiny_release: Path) -> None:
    steps = (
        "  - {method: identity, cubes: [hh]}\n"
        "  - {method: random_rounding, base: 5, seed: 7, cubes: [c1, hh]}\n"
        "  - {method: controlled_rounding, base: 3, steps: 2, cubes: [c2]}\n"
    )
    release = load_release(_config(tiny_release.parent, steps))
    assert rounding_params(release, "c1") == RoundingParams(base=5, steps=1)
    assert rounding_params(release, "hh") == RoundingParams(base=5, steps=1)
    # the public steps, whatever the solve needed (its steps_used is internal): what a user reads the cube with
    assert rounding_params(release, "c2") == RoundingParams(base=3, steps=2)


def test_cubes_whose_last_protection_does_not_round_have_no_rounding_params(tiny_release: Path) -> None:
    release = load_release(_config(tiny_release.parent, MIXED_STEPS))
    assert rounding_params(release, "hh") is None
    assert rounding_params(release, "c1") == RoundingParams(base=3, steps=1)


def _walk(config: Path) -> tuple[RunSpec, Results]:
    services = Services(validate=validate_release, gate=gate_release)
    spec, prepared = prepare(RunSpec(str(config), release_id="r1"), services)
    results: Results = {"prepare": prepared}
    walk(spec, PlainRunner(services), results)
    return spec, results


def test_a_release_with_rounding_steps_shows_the_measures_in_its_report_files(tiny_release: Path) -> None:
    config = _config(tiny_release.parent, MIXED_STEPS)
    spec, results = _walk(config)
    out = config.parent / "out"
    columns = [f"{k}@cube" for k in ROUNDING_KEYS]
    measures = pd.read_parquet(out / "report" / "measures.parquet").set_index("cube")
    pd.testing.assert_frame_equal(measures, pd.read_parquet(out / "internal" / "measures.parquet"), check_names=False)
    assert measures.loc["hh", columns].isna().all()  # the cell key method: no rounding measures
    c1, c2 = measures.loc["c1"], measures.loc["c2"]
    for row in (c1, c2):
        assert all(0.0 <= row[f"{m}@cube"] <= 1.0 for m in MEASURES if m.endswith("share"))
        assert row["rounding_base@cube"] == 3.0
    # controlled rounding keeps its promise, measured with the public steps (its steps_used is internal)
    report: dict[str, Any] = open_cube(out / "protected.zarr", "c2").attrs["controlled_rounding"]
    assert c2["rounding_steps@cube"] == 2.0
    assert c2["existence_interval_contains_share@cube"] == 1.0
    if report.get("steps_used") == 1:  # zero-restricted: every cell to an adjacent multiple
        assert c2["beyond_one_base_share@cube"] == 0.0
    # semi-controlled: subtotals summed from the rounded interior may fall outside the user's interval
    assert c1["rounding_steps@cube"] == 1.0 and c1["existence_interval_contains_share@cube"] < 1.0

    page = (out / "report" / "report.html").read_text(encoding="utf-8")
    assert '<h3 id="rounding-measures">Rounding</h3>' in page
    assert "cube c1: base 3, steps 1</caption>" in page
    assert f"cube c2: base 3, steps {c2['rounding_steps@cube']:.0f}</caption>" in page
    assert "cube hh: base" not in page
    assert all(page.count(f"<th>{m}</th>") == 2 for m in MEASURES)  # one row in each of the two tables
    assert "rounding_base" not in page  # shown in the captions, not as a measure

    result = summary(spec, results)  # what the Prefect artifact is built from (tasks/artifact.py)
    markdown = release_markdown(result, pd.read_parquet(result["measures"]["measures"]))
    section = markdown.split("## Rounding (every cell)")[1]
    assert "**c1**" in section and "**c2**" in section and "**hh**" not in section
    assert f"| existence_interval_contains_share | {c1['existence_interval_contains_share@cube']:.4g} |" in section
    assert "base 3" not in markdown  # the markdown never shows a step's parameter
