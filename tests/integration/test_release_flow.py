"""The release flow under Prefect's test harness: publish, audit, resume, block, lock, Dask, reproduce."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from prefect.testing.utilities import prefect_test_harness

from cubeguard.audit.errors import AuditStoreError
from cubeguard.audit.record import sha256_file
from cubeguard.audit.store import AuditStore
from cubeguard.audit.verify import verify
from cubeguard.errors import ReleaseBlocked
from cubeguard.pipeline.reproduce import plan_reproduction
from cubeguard.publish.lock import ReleaseLocked, release_lock
from flows.release import release_flow, with_dask
from flows.reproduce import reproduce_release
from tests.conftest import CELL_KEY_STEP, TINY_CONFIG, tiny_microdata


@pytest.fixture(scope="module", autouse=True)
def harness() -> Iterator[None]:
    with prefect_test_harness(server_startup_timeout=180):
        yield


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    tiny_microdata().to_parquet(tmp_path / "data" / "persons.parquet")
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_CONFIG)
    return path


def published_files(folder: Path) -> dict[str, str]:
    """Checksums of a published release's files, manifest left out (it holds a time)."""
    return {
        p.relative_to(folder).as_posix(): sha256_file(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }


def records(config: Path) -> list[Any]:
    with AuditStore.for_path(config.parent / "out" / "internal" / "audit.sqlite") as store:
        return [s.record for s in store.records()]


def test_release_publishes_manifest_and_audit_record(config: Path) -> None:
    result = release_flow(str(config), release_id="r1")
    folder = config.parent / "out" / "published" / "r1"
    assert result["published"] == str(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["files"] == published_files(folder)
    assert {c["id"] for c in manifest["cubes"]} == {"c1", "c2", "hh"}
    assert manifest["methods"]["steps"][0]["method"] == "cell_key"
    assert "D" not in manifest["methods"]["steps"][0]["parameters"]
    (rec,) = records(config)
    assert rec.outcome == "published" and rec.release_id == "r1"
    assert rec.outputs == {**published_files(folder), "manifest.json": sha256_file(folder / "manifest.json")}
    with AuditStore.for_path(config.parent / "out" / "internal" / "audit.sqlite") as store:
        assert verify(store).ok
        (folder / "exports" / "c1.csv").write_text("tampered\n")
        report = verify(store)
    assert not report.ok and any("c1.csv" in p for p in report.problems)


def test_a_safe_release_publishes_every_cube_households_too_without_1s_and_2s(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    persons = tiny_microdata(n_households=40)
    persons.to_parquet(tmp_path / "data" / "persons.parquet")
    groups = pd.cut(persons["age"], [0, 5, 15, 65, 121], right=False)
    assert persons.groupby(["region", "sex", groups], observed=True).size().isin([1, 2]).any()  # work to do
    text = TINY_CONFIG.replace("steps:\n" + CELL_KEY_STEP, "pre_tabular:\n  - {method: safe, seed: 8642097531}\n")
    (tmp_path / "tiny.yaml").write_text(text)
    result = release_flow(str(tmp_path / "tiny.yaml"), release_id="s1")
    folder = Path(result["published"])
    manifest = json.loads((folder / "manifest.json").read_text())
    (step,) = manifest["methods"]["pre_tabular"]
    assert step["method"] == "safe" and step["parameters"]["start"] == {"one": 3, "other": 5}
    assert "8642097531" not in json.dumps(manifest)
    for cube in ("c1", "c2", "hh"):  # hh counts households through their reference person
        counts = pd.read_csv(folder / "exports" / f"{cube}.csv")["count"]
        assert len(counts) > 0 and not counts.isin([1, 2]).any(), cube
    households = pd.read_csv(folder / "exports" / "hh.csv")["count"].max()
    assert households == 40  # moves never change a record's population: the household total is kept
    page = (tmp_path / "out" / "report" / "report.html").read_text()
    assert 'id="safe-section"' in page and "Model 3 reached the target bounds" in page
    assert "8642097531" not in page


@pytest.fixture(scope="module")
def clean_release(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The published files of an uninterrupted run of the tiny release."""
    folder = tmp_path_factory.mktemp("clean")
    (folder / "data").mkdir()
    tiny_microdata().to_parquet(folder / "data" / "persons.parquet")
    (folder / "tiny.yaml").write_text(TINY_CONFIG)
    return published_files(Path(release_flow(str(folder / "tiny.yaml"), release_id="r1")["published"]))


# The core function each step's task calls, where a crash is injected.
CRASH_POINTS = {
    "validate": "schemas.validate.validate_microdata",
    "tabulate": "cubeguard.release.steps.write_tabulation",
    "protect": "cubeguard.release.steps.protect_cube",
    "measure": "cubeguard.release.steps.measure_release",
    "gate": "expectations.release.run_gates",
    "report": "cubeguard.release.reporting.build_report",
    "publish": "cubeguard.release.steps.publish_release",
}


@pytest.mark.parametrize("step", list(CRASH_POINTS))
def test_crash_in_any_step_publishes_nothing_and_a_rerun_completes(
    step: str, config: Path, clean_release: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*args: Any, **kwargs: Any) -> Any:
        raise OSError(f"disk full in {step} (injected)")

    monkeypatch.setattr(CRASH_POINTS[step], crash)
    with pytest.raises(OSError, match="injected"):
        release_flow(str(config), release_id="r1")
    out = config.parent / "out"
    assert not (out / "published" / "r1").exists()
    assert [r.outcome for r in records(config)] == ["failed"]
    monkeypatch.undo()
    resumed = release_flow(str(config), release_id="r1")
    assert [r.outcome for r in records(config)] == ["failed", "published"]
    assert published_files(Path(resumed["published"])) == clean_release


def test_rerun_after_a_crash_does_not_redo_finished_steps(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(*args: Any, **kwargs: Any) -> Any:
        raise OSError("injected")

    monkeypatch.setattr("cubeguard.release.steps.measure_release", crash)
    with pytest.raises(OSError, match="injected"):
        release_flow(str(config), release_id="r1")
    out = config.parent / "out"
    stamps = {p: (out / p / "zarr.json").stat().st_mtime_ns for p in ("original.zarr", "protected.zarr")}
    monkeypatch.undo()
    release_flow(str(config), release_id="r1")
    assert {p: (out / p / "zarr.json").stat().st_mtime_ns for p in stamps} == stamps  # reused, not rewritten


@pytest.mark.slow
def test_changed_config_is_never_served_from_an_earlier_attempt(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = release_flow(str(config), release_id="a")
    monkeypatch.setenv("TEST_CKM_D", "8")
    monkeypatch.setenv("TEST_CKM_V", "6")
    secrets = {"steps[0].D": {"env": "TEST_CKM_D"}, "steps[0].V": {"env": "TEST_CKM_V"}}  # never inline
    second = release_flow(str(config), overrides=secrets, release_id="b")
    assert published_files(Path(first["published"])) != published_files(Path(second["published"]))
    again = release_flow(str(config), release_id="c")
    assert published_files(Path(first["published"])) == published_files(Path(again["published"]))


def test_blocked_release_publishes_nothing(config: Path) -> None:
    with pytest.raises(ReleaseBlocked):
        release_flow(str(config), overrides={"gates.max_hellinger": 0.0}, release_id="r1")
    published = config.parent / "out" / "published"
    assert not published.exists() or [p.name for p in published.iterdir() if not p.name.startswith(".")] == []
    (rec,) = records(config)
    assert rec.outcome == "blocked" and rec.outputs == {} and any(g["status"] == "fail" for g in rec.gates)


def test_second_release_into_the_same_folder_stops_at_once(config: Path) -> None:
    with release_lock(config.parent / "out"), pytest.raises(ReleaseLocked, match="another release"):
        release_flow(str(config), release_id="r1")
    assert not (config.parent / "out" / "original.zarr").exists()


@pytest.mark.slow
def test_dask_cluster_gives_the_same_release(config: Path) -> None:
    tiny_microdata().to_parquet(config.parent / "data" / "persons.parquet", row_group_size=700)
    local = release_flow(str(config), release_id="local")
    on_dask = with_dask(release_flow, None, 2)(str(config), release_id="dask", fresh=True, tabulate_parts=2)
    assert published_files(Path(local["published"])) == published_files(Path(on_dask["published"]))


def test_reproduce_from_the_audit_record(
    config: Path, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    config.write_text(TINY_CONFIG.replace("D: 5, V: 3", "D: {env: TEST_CKM_D}, V: 3"))
    monkeypatch.setenv("TEST_CKM_D", "8")
    release_flow(str(config), overrides={"steps[0].js": 1}, release_id="r1")
    monkeypatch.delenv("TEST_CKM_D")  # the rerun must take D from the audit record
    (rec,) = records(config)
    assert rec.secrets == {"steps[0].D": 8}
    plan = plan_reproduction(rec, config.parent / "plan-only")
    plan.config.unlink()
    assert plan.overrides == {
        "steps[0].js": 1,
        "steps[0].D": {"env": "CUBEGUARD_REPRODUCE_0"},  # never the value
        "output.folder": str(config.parent / "plan-only"),
        "output.audit_url": None,  # the rerun's record stays in the scratch
    }
    beside = sorted(config.parent.iterdir())
    temp = tmp_path_factory.mktemp("temp")
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # the system's temporary folder, by default
    comparison = reproduce_release(rec)
    assert comparison.identical and len(comparison.same) == len(rec.outputs) - 1
    assert sorted(config.parent.iterdir()) == beside  # no scratch folder or config left beside the config
    assert list(temp.iterdir()) == []  # the temporary folder is gone
    assert list(config.parent.rglob("original.zarr")) == [config.parent / "out" / "original.zarr"]  # the release's own
    assert [r.release_id for r in records(config)] == ["r1"]  # the rerun's record went with its folder


def test_a_locked_audit_store_publishes_nothing_and_a_rerun_completes(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release_flow(str(config), release_id="r0")  # the store exists, with one record
    monkeypatch.setattr("cubeguard.audit.schema.BUSY_TIMEOUT", 0.5)  # instead of waiting 30 s
    holder = sqlite3.connect(config.parent / "out" / "internal" / "audit.sqlite")
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the store's write lock
    try:
        with pytest.raises(AuditStoreError, match="cannot"):
            release_flow(str(config), release_id="r1")
    finally:
        holder.rollback()
        holder.close()
    assert not (config.parent / "out" / "published" / "r1").exists()  # not visible without its record
    monkeypatch.undo()
    release_flow(str(config), release_id="r1")
    assert [(r.outcome, r.release_id) for r in records(config)] == [("published", "r0"), ("published", "r1")]
    with AuditStore.for_path(config.parent / "out" / "internal" / "audit.sqlite") as store:
        assert verify(store).ok
