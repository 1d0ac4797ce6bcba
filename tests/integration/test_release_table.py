"""The release table walked without Prefect: the same release as the flow, resumed by the ledger alone."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cubeguard.audit.record import sha256_file
from cubeguard.audit.store import AuditStore
from cubeguard.audit.verify import verify
from cubeguard.config import load_release
from cubeguard.errors import ReleaseBlocked
from cubeguard.pipeline.protection import ProtectionSummary
from cubeguard.pipeline.tabulation import CubeSummary
from cubeguard.publish import stage
from cubeguard.publish.stage import COMMITTED
from cubeguard.release.audit import reconcile
from cubeguard.release.results import (
    Attacked,
    Gated,
    KeyStored,
    Measured,
    Prepared,
    PreTabulated,
    Protected,
    Published,
    Reported,
    StepResult,
    Tabulated,
    Validated,
)
from cubeguard.release.run import PlainRunner, Results, prepare, summary, walk
from cubeguard.release.spec import RunSpec
from cubeguard.release.steps import STEPS, Context, FannedStep, Services, step_named
from expectations.release import gate_release
from schemas.validate import validate_release


def _services() -> Services:
    return Services(validate=validate_release, gate=gate_release)


@pytest.fixture
def config(tiny_release: Path) -> Path:
    return tiny_release


def _release(config: Path, release_id: str | None, **options: Any) -> tuple[RunSpec, Results]:
    spec, prepared = prepare(RunSpec(str(config), release_id=release_id, **options), _services())
    results: Results = {"prepare": prepared}
    walk(spec, PlainRunner(_services()), results)
    return spec, results


def _files(folder: Path) -> dict[str, str]:
    return {p.name: sha256_file(p) for p in sorted(folder.rglob("*")) if p.is_file() and p.name != "manifest.json"}


def test_the_table_is_the_release_in_order() -> None:
    assert [s.name for s in STEPS] == [
        "validate",
        "pre_tabular",
        "tabulate",
        "key_store",
        "protect",
        "measure",
        "attack",
        "gate",
        "report",
        "publish",
    ]
    assert [s.name for s in STEPS if not s.resumable] == ["report", "publish"]  # always run, never reused
    assert {s.name for s in STEPS if isinstance(s, FannedStep)} == {"tabulate", "protect"}
    for step in STEPS:  # a step needs only results of steps before it
        assert all([s.name for s in STEPS].index(n) < [s.name for s in STEPS].index(step.name) for n in step.needs)


RESULTS: list[StepResult] = [
    Prepared(path="p.parquet", generated=False, records=12),
    Validated(records=12),
    PreTabulated(steps=("swap",), households_swapped=(3,), persons_swapped=(7,)),
    Tabulated((CubeSummary("c1", 2, 9, 4, 12, 0.25),)),
    KeyStored(path="out/internal/keystore", records=12),
    Protected((ProtectionSummary("c1", ["ckm"], 9, 0.5, 1, 2),)),
    Measured("m.parquet"),
    Attacked(path="out/internal/attack.json", recovered=2, broken=("averaging",)),
    Gated(passed=False, failures=("c1: small cells",), rows=({"cube": "c1", "status": "fail"},), docs=None),
    Reported("report.html"),
    Published(release_id="r1", path="out/published/r1", checksums={"a.csv": "00"}),
]


@pytest.mark.parametrize("result", RESULTS, ids=lambda r: type(r).__name__)
def test_every_result_reads_back_from_the_ledger_as_itself(result: StepResult) -> None:
    assert type(result).from_json(json.loads(json.dumps(result.to_json()))) == result


def test_plain_walk_publishes_what_the_flow_would_and_resumes_every_finished_step(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, first = _release(config, "r1")
    published = Path(summary(spec, first)["published"])
    assert published == config.parent / "out" / "published" / "r1" and (published / "manifest.json").is_file()
    report = config.parent / "out" / "report"
    assert (report / "r1.html").read_bytes() == (report / "report.html").read_bytes()  # archived per release
    page = (report / "r1.html").read_text()
    assert "<h1>Release r1</h1>" in page and f"hash {load_release(config).config_hash[:16]}" in page
    assert '<h2 id="cell-key-section">Cell key method</h2>' in page and "<h3>steps[0]</h3>" in page
    assert page.count('<details class="drilldown">') == 3 and "<td>finest of GEO.1</td>" in page  # levels named
    timings = json.loads((config.parent / "out" / "internal" / "timings.json").read_text())
    assert [t["step"] for t in timings] == [s.name for s in STEPS]  # one row per step, in order
    assert all(t["seconds"] >= 0 and t["cpu_seconds"] >= 0 for t in timings)
    assert all(a["started"] + a["seconds"] <= b["started"] + 0.01 for a, b in itertools.pairwise(timings))

    def must_not_run(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a finished step ran again")

    for name in ("write_tabulation", "protect_cube", "measure_release", "apply_pre_tabular"):
        monkeypatch.setattr(f"cubeguard.release.steps.{name}", must_not_run)
    monkeypatch.setattr("schemas.validate.validate_microdata", must_not_run)
    monkeypatch.setattr("expectations.release.run_gates", must_not_run)
    _, again = _release(config, "r2")  # same run key: every resumable step comes from the ledger
    assert {k: v for k, v in again.items() if k not in ("report", "publish")} == {
        k: v for k, v in first.items() if k not in ("report", "publish")
    }
    assert _files(config.parent / "out" / "published" / "r2") == _files(published)
    assert (report / "r1.html").is_file() and (report / "r2.html").is_file()  # the first one is kept


def test_publish_refuses_a_release_whose_gates_failed(config: Path) -> None:
    spec, _ = prepare(RunSpec(str(config), release_id="r1"), _services())
    rows = ({"status": "fail"}, {"status": "warn"}, {"status": "pass"}, {"status": "warn"})
    blocked = Gated(passed=False, failures=("c1: 3 cells of 1 or 2 unchanged",), rows=rows)
    ctx = Context(spec, spec.release(), _services(), {"gate": blocked})
    with pytest.raises(ReleaseBlocked) as info:
        step_named("publish").compute(ctx)
    assert info.value.failures == ["c1: 3 cells of 1 or 2 unchanged"]
    assert str(info.value) == (  # warnings are not counted as failures (they once were: "3 ... failed")
        "the release is blocked: 1 blocking gate check(s) failed (and 2 warning(s)); see the list above"
    )
    assert not (config.parent / "out" / "published").exists()


def _verify(config: Path) -> Any:
    with AuditStore.for_path(config.parent / "out" / "internal" / "audit.sqlite") as store:
        return verify(store), [s.record.outcome for s in store.records()]


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs in the walk (no failure record)."""


@pytest.mark.parametrize("point", [COMMITTED, "before-rename", "after-rename"])
def test_a_release_is_visible_only_with_its_committed_record(
    config: Path, point: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def kill(at: str) -> None:
        if at == point:
            raise Killed(at)

    monkeypatch.setattr(stage, "_checkpoint", kill)
    with pytest.raises(Killed):
        _release(config, "r1")
    monkeypatch.undo()
    visible = (config.parent / "out" / "published" / "r1").is_dir()
    report, outcomes = _verify(config)
    assert outcomes == ["published"]  # committed before the rename, whatever happened next
    assert visible == (point == "after-rename")
    assert report.ok == visible  # a record of a release that never appeared is a problem ...
    assert reconcile(load_release(config)) == ([] if visible else [2])  # ... until reconciled
    report, outcomes = _verify(config)
    assert report.ok and outcomes == (["published"] if visible else ["published", "failed"])
    if not visible:  # a rerun completes
        spec, results = _release(config, "r1")
        assert summary(spec, results)["audit"]["seq"] == 3 and _verify(config)[0].ok


def test_a_folder_in_published_that_no_record_lists_is_found(config: Path) -> None:
    _release(config, "r1")
    shutil.copytree(config.parent / "out" / "published" / "r1", config.parent / "out" / "published" / "smuggled")
    report, _ = _verify(config)
    assert not report.ok and any("smuggled is in published/ but no audit record lists it" in p for p in report.problems)


def test_a_release_without_a_given_id_shows_in_its_report_the_id_it_is_published_under(config: Path) -> None:
    spec, results = _release(config, None)
    published = Path(summary(spec, results)["published"])
    assert published.name.startswith("tiny-") and spec.release_id == published.name
    page = (config.parent / "out" / "report" / f"{published.name}.html").read_text()
    assert f"<h1>Release {published.name}</h1>" in page
