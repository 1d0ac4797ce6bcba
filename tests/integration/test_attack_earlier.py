"""Earlier releases of the same microdata are attacked together with a new one (issue 35).

An intruder keeps what was published before: each earlier publication recorded in the audit store
with the same input checksums joins the attack as ``<cube>@<release id>``, bounded by the steps and
secrets it was published with (not today's config or environment), scored against today's originals.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from cubeguard.config import load_release
from cubeguard.pipeline.attack import attack_file, cube_views
from cubeguard.pipeline.earlier import earlier_of, earlier_publications
from cubeguard.release.run import PlainRunner, prepare, walk
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import Services
from expectations.release import gate_release
from schemas.validate import validate_release
from tests.conftest import TINY_CONFIG, tiny_microdata

SERVICES = Services(validate=validate_release, gate=gate_release)
WIDE = {"steps[0].D": {"env": "CUBEGUARD_TEST_EARLIER_D"}}  # D = 5 by reference, as a release gives it
NARROW = {"steps[0].D": 3, "steps[0].V": 2.5}


def _release(config: Path, release_id: str, overrides: dict[str, object]) -> None:
    spec, prepared = prepare(RunSpec(str(config), overrides, release_id=release_id), SERVICES)
    walk(spec, PlainRunner(SERVICES), {"prepare": prepared})


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """r1 with D = 5 given by an environment variable (unset afterwards), r2 with D = 3, r3 as r2."""
    folder = tmp_path_factory.mktemp("earlier")
    (folder / "data").mkdir()
    tiny_microdata(n_households=300).to_parquet(folder / "data" / "persons.parquet", row_group_size=2000)
    config = folder / "tiny.yaml"
    gates = "gates: {max_small_cells_unchanged: 1.0, max_recovered_by_attack: 0}"
    config.write_text(TINY_CONFIG.replace("gates: {forbidden_values: [1, 2]}", gates))
    os.environ["CUBEGUARD_TEST_EARLIER_D"] = "5"
    try:
        _release(config, "r1", WIDE)
    finally:
        del os.environ["CUBEGUARD_TEST_EARLIER_D"]  # the attack must use the recorded value
    _release(config, "r2", NARROW)
    _release(config, "r3", NARROW)
    return config


def _width(bounds: object, value: int = 100) -> float:
    lo, hi = bounds(np.array([value]), np.array([True]))  # type: ignore[operator]
    return float(hi[0] - lo[0])


def test_an_earlier_publication_joins_with_the_bounds_it_was_published_with(published: Path) -> None:
    release = load_release(published, NARROW)
    views, bounds = cube_views(release, current="r2")
    names = {v.cube for v in views}
    assert {"c1", "c2", "hh", "c1@r1"} <= names
    assert all(name.endswith("@r1") for name in names if "@" in name)  # r3 publishes as r2 does: nothing new
    assert _width(bounds["c1"]) == 6 and _width(bounds["c1@r1"]) == 10  # D = 3 now, D = 5 then
    mine, then = (next(v for v in views if v.cube == name) for name in ("c1", "c1@r1"))
    assert then.original is not None and np.array_equal(then.original, mine.original)  # scored against today's
    assert not np.array_equal(then.published, mine.published) and earlier_of("c1@r1") == ("c1", "r1")


def test_only_publications_of_the_same_microdata_are_attacked_together(published: Path, tmp_path: Path) -> None:
    assert [r.release_id for r in earlier_publications(load_release(published, NARROW))] == ["r3", "r2", "r1"]
    copy = tmp_path / "copy"
    shutil.copytree(published.parent, copy)
    tiny_microdata(n_households=301).to_parquet(copy / "data" / "persons.parquet", row_group_size=2000)
    assert earlier_publications(load_release(copy / "tiny.yaml", NARROW)) == []  # other input checksums


def test_the_release_attack_step_scores_the_earlier_cubes_too(published: Path) -> None:
    release = load_release(published, NARROW)
    findings = json.loads(attack_file(release).read_text())  # r3's attack step
    cubes = {row["cube"] for row in findings["facts"]}
    assert "c1@r1" in cubes and not any(c.endswith(("@r2", "@r3")) for c in cubes)
