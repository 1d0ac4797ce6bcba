"""One plan per release (issue 36): built once by the entry point, never reloaded by a step.

The whole release table is walked with the config loader and the step builder counted: after
:func:`plan_release` no step loads the config again, and each post-tabular step is prepared once for
all cubes, not once per cube.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

import cubeguard.config.load
import cubeguard.release.plan
from cubeguard.errors import CubeguardError
from cubeguard.release.plan import ReleasePlan, plan_release
from cubeguard.release.run import PlainRunner, prepare, walk
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import Services
from expectations.release import gate_release
from schemas.validate import validate_release
from tests.conftest import TINY_CONFIG, tiny_microdata


def _services() -> Services:
    return Services(validate=validate_release, gate=gate_release)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count every load of a release config and every preparation of a post-tabular step."""
    calls = {"load": 0, "build": 0}
    load, build = cubeguard.config.load.load_release, cubeguard.release.plan.build_step

    def counting_load(*args: Any, **kwargs: Any) -> Any:
        calls["load"] += 1
        return load(*args, **kwargs)

    def counting_build(*args: Any, **kwargs: Any) -> Any:
        calls["build"] += 1
        return build(*args, **kwargs)

    monkeypatch.setattr(cubeguard.release.plan, "load_release", counting_load)
    monkeypatch.setattr(cubeguard.config.load, "load_release", counting_load)
    monkeypatch.setattr(cubeguard.release.plan, "build_step", counting_build)
    return calls


def test_the_release_is_planned_once_and_each_step_prepared_once(tiny_release: Path, counted: dict[str, int]) -> None:
    plan = plan_release(str(tiny_release), release_id="p1")
    assert counted == {"load": 1, "build": 0}
    cubes = [c.id for c in plan.release.config.hypercubes]
    assert len(cubes) == 3 and set(plan.cube_steps) == set(cubes)
    spec, prepared = prepare(RunSpec(str(tiny_release), release_id="p1", plan=plan), _services())
    walk(spec, PlainRunner(_services()), {"prepare": prepared})
    assert (tiny_release.parent / "out" / "published" / "p1" / "manifest.json").is_file()
    assert counted["load"] == 1  # no step reloaded the config
    assert counted["build"] == len(plan.release.config.steps) == 1  # one cell key step for three cubes


def test_a_spec_without_a_plan_loads_one_once_per_process(tiny_release: Path) -> None:
    spec = RunSpec(str(tiny_release), {"steps[0].js": 1})
    assert spec.release_plan() is RunSpec(str(tiny_release), {"steps[0].js": 1}).release_plan()
    assert spec.release().config.steps[0].js == 1  # type: ignore[union-attr]


def test_a_plan_travels_to_another_process_without_its_prepared_steps(tiny_release: Path) -> None:
    plan = plan_release(str(tiny_release))
    plan.step_function(0, None)
    copy = pickle.loads(pickle.dumps(plan))
    assert isinstance(copy, ReleasePlan) and copy._prepared == {} and plan._prepared
    assert copy.cube_steps.keys() == plan.cube_steps.keys() and copy.additive == plan.additive


def test_planning_runs_the_preflight_checks(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    tiny_microdata().to_parquet(tmp_path / "data" / "persons.parquet")
    (tmp_path / "tiny.yaml").write_text(TINY_CONFIG)
    with pytest.raises(CubeguardError, match=r"overrides steps\[0\]\.D: a secret given inline is refused"):
        plan_release(str(tmp_path / "tiny.yaml"), {"steps[0].D": 4}, given_as="overrides")
