"""The CLI as a user runs it: a real Prefect flow run in a subprocess, then export and inspect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cubeguard.cubes.store import list_cubes, open_cube
from tests.conftest import TINY_GATES, tiny_microdata
from tests.unit.test_sdmx_csv import sdmx2_columns

pytestmark = pytest.mark.prefect


def cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=cwd,
        env={**os.environ, "PREFECT_HOME": str(cwd / ".prefect"), "COLUMNS": "200", **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_release_writes_every_cube_and_exports(tiny_release: Path) -> None:
    run = cli("release", str(tiny_release), "--release-id", "r1", cwd=tiny_release.parent)
    assert run.returncode == 0, run.stderr
    assert "3 cubes" in run.stdout and "Traceback" not in run.stderr
    original = tiny_release.parent / "out" / "original.zarr"
    store = tiny_release.parent / "out" / "protected.zarr"
    assert list_cubes(original) == list_cubes(store) == ["c1", "c2", "hh"]
    c1 = open_cube(original, "c1")
    assert int(c1["count"].sel({"GEO.2": "0", "SEX": "0", "AGE.M": "T"})) == len(tiny_microdata())
    hh = open_cube(original, "hh")
    assert int(hh["count"].sel({"GEO.2": "0"})) == 3000  # one reference person per household
    p1 = open_cube(store, "c1").load()
    assert "key_sum" not in p1 and p1.attrs["steps"] == ["cell_key"]
    assert ((p1["count"] - c1["count"]) == p1["noise"]).all()
    assert not p1["count"].isin([1, 2]).any()  # js = 2
    assert (p1["count"].where(c1["count"] == 0, 0) == 0).all()  # zeros stay zeros

    published = tiny_release.parent / "out" / "published" / "r1" / "store.zarr"
    for fmt, name in (("csv", "c1.csv"), ("parquet", "c1.parquet"), ("sdmx-csv", "c1.sdmx.csv")):
        out = tiny_release.parent / name
        exp = cli("export", str(published), "--cube", "c1", "--format", fmt, "--out", str(out), cwd=out.parent)
        assert exp.returncode == 0, exp.stderr
        flat = pd.read_parquet(out) if fmt == "parquet" else pd.read_csv(out, dtype=str)
        assert len(flat) == c1["count"].size
        internal = cli("export", str(store), "--cube", "c1", "--format", fmt, "--out", str(out), cwd=out.parent)
        assert internal.returncode == 2 and "is not a published release" in internal.stderr
    sdmx = pd.read_csv(tiny_release.parent / "c1.sdmx.csv", dtype=str)
    assert list(sdmx.columns) == sdmx2_columns("GEO", "SEX", "AGE")
    v1 = tiny_release.parent / "c1.v1.sdmx.csv"
    args = ("export", str(published), "--cube", "c1", "--format", "sdmx-csv", "--sdmx-version", "1.0", "--out", str(v1))
    assert cli(*args, "--config", str(tiny_release), cwd=v1.parent).returncode == 0
    assert v1.read_text().startswith("DATAFLOW,GEO,SEX,AGE,TIME_PERIOD,OBS_VALUE,OBS_STATUS,CONF_STATUS\n")
    assert "key_sum" not in pd.read_parquet(tiny_release.parent / "c1.parquet").columns
    exact = tiny_release.parent / "exact.csv"
    args = ("export", str(original), "--cube", "c1", "--out", str(exact), "--internal")
    assert cli(*args, cwd=exact.parent).returncode == 0
    assert exact.read_text().startswith("# INTERNAL - NOT FOR PUBLICATION: cube c1 of original.zarr")

    shown = cli("inspect", str(store), cwd=tiny_release.parent)
    assert shown.returncode == 0 and "GEO.2 x SEX x AGE.M" in shown.stdout


def test_bad_config_exits_2_listing_problems(tiny_release: Path) -> None:
    text = tiny_release.read_text().replace("[GEO.1, AGE.L]", "[GEO.1, AGE.Q]")
    tiny_release.write_text(text)
    run = cli("validate", str(tiny_release), cwd=tiny_release.parent)
    assert run.returncode == 2
    assert "has 1 problem(s)" in run.stderr and "unknown breakdown 'AGE.Q'" in run.stderr


@pytest.mark.slow
def test_audit_reproduce_leaves_no_scratch_behind(tiny_release: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tiny_release.parent
    assert cli("release", str(tiny_release), "--release-id", "r1", cwd=folder).returncode == 0
    beside = sorted(folder.iterdir()), sorted((folder / "out").rglob("*"))
    temp = tmp_path_factory.mktemp("temp")
    run = cli("audit", "reproduce", str(tiny_release), "1", cwd=folder, TMPDIR=str(temp))
    assert run.returncode == 0, run.stderr
    said = " ".join(run.stdout.split())
    assert "Reran release r1 in a temporary folder, now removed:" in said and "Reproduced bit for bit." in said
    assert (sorted(folder.iterdir()), sorted((folder / "out").rglob("*"))) == beside  # nothing new here or in out/
    assert list(temp.iterdir()) == []  # the rerun's unprotected counts and secrets are gone
    verified = cli("audit", "verify", str(tiny_release), cwd=folder)
    said = " ".join(verified.stdout.split())
    assert verified.returncode == 0 and said.lower().count("audit store intact") == 1, said
    manifest = next((folder / "out" / "published").glob("*/manifest.json"))
    manifest.write_text(manifest.read_text() + " ")
    tampered = cli("audit", "verify", str(tiny_release), cwd=folder)
    said = " ".join(tampered.stdout.split())
    assert tampered.returncode == 1 and "audit store has 1 problem(s)" in said and "manifest.json" in said, said


def test_secret_given_inline_with_set_is_refused_before_anything_runs(tiny_release: Path) -> None:
    run = cli(
        "release", str(tiny_release), "--set", "steps[0].js=1", "--set", "steps[0].V=4.75", cwd=tiny_release.parent
    )
    assert run.returncode == 2, run.stdout
    said = " ".join(run.stderr.split())  # rich wraps long lines
    assert said.startswith("Error: --set steps[0].V: secrets given inline would be stored and shown among Prefect's")
    assert "pass them by reference instead, e.g. --set 'steps[0].V={env: NAME}'" in said
    assert "4.75" not in run.stdout + run.stderr and "Traceback" not in said
    assert not (tiny_release.parent / ".prefect").exists()  # Prefect was never set up
    assert not (tiny_release.parent / "out").exists()


def test_export_of_unknown_cube_is_one_sentence(tmp_path: Path) -> None:
    run = cli("export", str(tmp_path / "nothing.zarr"), "--cube", "x", cwd=tmp_path)
    assert run.returncode == 2 and "does not exist" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.slow
def test_failing_gate_blocks_the_release_with_exit_1(tiny_release: Path) -> None:
    text = tiny_release.read_text()  # any noise breaks a zero bound on the mean absolute deviation
    tiny_release.write_text(
        text.replace(TINY_GATES, "gates: {forbidden_values: [1, 2], max_mean_absolute_deviation: 0.0}\n")
    )
    run = cli("release", str(tiny_release), cwd=tiny_release.parent)
    assert run.returncode == 1, run.stderr
    assert "Release blocked by its gates" in run.stderr and "ExpectDistanceWithinBound" in run.stderr
    assert "Traceback" not in run.stderr + run.stdout
    assert (tiny_release.parent / "out" / "report" / "report.html").exists()  # the report shows why
