"""The means attack in a release: a tiny release whose cube c3 (GEO.2 x SEX) publishes perturbed sums of age.

As tests/integration/test_cube_sums.py builds it (TINY_CONFIG plus c3 with ``sums: [age]``, the
cell key step perturbing age by its two largest values), on 6 households so that c3 holds
1s and 2s, with the attack gate on. The attack step reads the published and exact sums, each
cell's ages from the AGE classification and the bound of the sums' perturbation from the step;
the means attack recovers nothing and its self-test finds every small cell of c3.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cubeguard.attack.means import noise_bound
from cubeguard.ckm.magnitude import read_num_ptable
from cubeguard.config import load_release
from cubeguard.methods.cell_key.model import CellKeyStep
from cubeguard.pipeline.attack import cell_ranges, column_range, cube_views, read_attack
from tests.conftest import TINY_CONFIG, TINY_GATES, tiny_microdata
from tests.tables_release import TABLES, publish

CONFIG = TINY_CONFIG.replace(
    "  - {id: hh, population: households, breakdowns: [GEO.2]}\n",
    "  - {id: hh, population: households, breakdowns: [GEO.2]}\n  - {id: c3, breakdowns: [GEO.2, SEX], sums: [age]}\n",
).replace(TINY_GATES, "gates: {forbidden_values: [1, 2], max_recovered_by_attack: 0}\n")


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return publish(tmp_path_factory.mktemp("means"), TABLES, data=tiny_microdata(n_households=6), config=CONFIG)


def test_the_attack_step_reports_the_means_attack_with_nothing_recovered(config: Path) -> None:
    report = read_attack(load_release(config))
    assert report is not None and report.broken == []
    means = [f for f in report.facts if f.attack == "means"]
    assert {(f.cube, f.unprotected) for f in means} == {("c3", False), ("c3", True)}  # only the cube with sums
    published = next(f for f in means if not f.unprotected)
    unprotected = next(f for f in means if f.unprotected)
    assert published.targets > 0 and published.certain == 0
    assert unprotected.certain == unprotected.targets == published.targets  # self-test complete


def test_the_views_carry_the_sums_their_ages_and_the_bound_of_their_perturbation(config: Path) -> None:
    release = load_release(config)
    views = {v.cube: v for v in cube_views(release)[0]}
    assert [v.cube for v in views.values() if v.sums] == ["c3"]
    sums = views["c3"].sums[0]
    assert sums.column == "age" and sums.original is not None
    assert not np.array_equal(sums.published, sums.original)  # published perturbed, original exact
    assert column_range(release, "age") == (0.0, 120.0)  # every leaf of AGE: 0-4, ..., 65-120
    assert (sums.low == 0).all() and (sums.high == 120).all()  # c3 does not cross age
    step = release.config.steps[0]
    assert isinstance(step, CellKeyStep)
    spec = step.magnitudes["age"]
    vmax = float(np.abs(read_num_ptable(spec.ptable_file).v).max())
    expected = noise_bound(spec, vmax, spec.unit, sums.published, sums.low, sums.high, (0.0, 120.0))
    np.testing.assert_array_equal(sums.delta, expected)
    assert (np.abs(sums.published - sums.original) <= sums.delta).all()


def test_a_cube_crossing_age_gives_each_cell_its_codes_ages(config: Path) -> None:
    """c1 (GEO.2 x SEX x AGE.M): a band's ends, a subtotal's leaves, the total's whole range."""
    release = load_release(config)
    c1 = next(v for v in cube_views(release)[0] if v.cube == "c1")
    low, high = cell_ranges(release, c1, "age", column_range(release, "age"))
    ages = dict(zip(c1.codes[2], zip(low[0, 0].tolist(), high[0, 0].tolist(), strict=True), strict=True))
    assert ages == {"T": (0, 120), "Y_LT15": (0, 14), "Y0-4": (0, 4), "Y5-14": (5, 14), "Y15-64": (15, 64),
                    "Y_GE65": (65, 120)}  # fmt: skip
