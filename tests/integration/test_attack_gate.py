"""The attack gate in a release: a protected release passes it, an unprotected one is blocked, the report says why.

The tiny release (40 households) walks the release table without Prefect, once with the cell key
method and once published unprotected (identity, ``allow_unprotected``), each with
``gates.max_recovered_by_attack: 0``; and ``cubeguard attack`` runs on the first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from cubeguard.config import load_release
from cubeguard.errors import ReleaseBlocked
from cubeguard.pipeline.attack import read_attack
from cubeguard.release.run import PlainRunner, Results, prepare, walk
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import Services
from expectations.release import gate_release
from schemas.validate import validate_release
from tests.conftest import CELL_KEY_STEP, TINY_GATES, tiny_microdata

ATTACK_GATES = "gates: {forbidden_values: [1, 2], max_recovered_by_attack: 0}\n"


def _run(config: Path, release_id: str) -> Results:
    services = Services(validate=validate_release, gate=gate_release)
    spec, prepared = prepare(RunSpec(str(config), release_id=release_id), services)
    results: Results = {"prepare": prepared}
    walk(spec, PlainRunner(services), results)
    return results


def _with(config: Path, *replacements: tuple[str, str]) -> Path:
    """``config`` edited, with microdata small enough (40 households) that its cubes hold 1s and 2s."""
    tiny_microdata(n_households=40).to_parquet(config.parent / "data" / "persons.parquet")
    text = config.read_text()
    for old, new in replacements:
        assert old in text
        text = text.replace(old, new)
    config.write_text(text)
    return config


def test_a_protected_release_passes_the_attack_gate_and_reports_the_attacks(tiny_release: Path) -> None:
    config = _with(tiny_release, (TINY_GATES, ATTACK_GATES))
    results = _run(config, "r1")
    attacked = results["attack"]
    assert attacked.path is not None and attacked.recovered == 0 and attacked.broken == ()  # type: ignore[attr-defined]
    report = read_attack(load_release(config))
    assert report is not None and report.broken == []
    assert {f.attack for f in report.published} >= {"feasibility", "differencing", "averaging"}
    assert sum(f.targets for f in report.published if f.attack == "feasibility") > 0  # the tiny cubes have 1s and 2s
    rows = [r for r in results["gate"].rows if "Attack" in r["expectation"]]  # type: ignore[attr-defined]
    assert {r["status"] for r in rows} == {"pass"} and len(rows) == 2 * 3  # two expectations, three cubes
    page = (config.parent / "out" / "report" / "report.html").read_text()
    assert '<h2 id="attack-section">Attacks</h2>' in page and "self-test" in page


def test_an_unprotected_release_is_blocked_by_the_attack_gate_naming_the_cells(tiny_release: Path) -> None:
    config = _with(
        tiny_release,
        (TINY_GATES, "gates: {max_recovered_by_attack: 0}\n"),
        (CELL_KEY_STEP, "  - {method: identity}\n"),
        ("name: tiny\n", 'name: tiny\nallow_unprotected: "test: the attack gate must block this"\n'),
    )
    with pytest.raises(ReleaseBlocked) as info:
        _run(config, "r1")
    assert any("RecoveredByAttack" in f for f in info.value.failures)
    assert not (config.parent / "out" / "published" / "r1").exists()
    found = json.loads((config.parent / "out" / "internal" / "attack.json").read_text())
    certain = [f for f in found["facts"] if not f["unprotected"] and f["certain"]]
    assert certain and all(f["certain"] == f["targets"] for f in certain if f["attack"] == "feasibility")
    assert all("=" in name for f in certain for name in f["named"])  # cells by their codes


def test_the_attack_command_prints_the_findings_and_exits_1_when_a_cube_gives_way(tiny_release: Path) -> None:
    config = _with(
        tiny_release,
        (TINY_GATES, "gates: {max_recovered_by_attack: 0}\n"),
        (CELL_KEY_STEP, "  - {method: identity}\n"),
        ("name: tiny\n", 'name: tiny\nallow_unprotected: "test: the attack gate must block this"\n'),
    )
    with pytest.raises(ReleaseBlocked):
        _run(config, "r1")
    done = CliRunner().invoke(app, ["attack", str(config)])
    assert done.exit_code == 1, done.output
    assert "A cube gives way: " in done.output and "Findings (internal, they name the cells)" in done.output
    assert "feasibility" in done.output
