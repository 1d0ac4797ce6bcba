"""Secret parameters (cell key D and V, record-key seed) never reach outputs or logs outside internal/."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import tiny_microdata

pytestmark = pytest.mark.prefect

_RNG = random.Random()  # fresh distinctive values each run, so no output can match them by chance
SECRETS = {
    "CG_TEST_D": "7",
    "CG_TEST_V": f"3.{_RNG.randrange(100_000, 899_999)}",
    "CG_TEST_KEY_SEED": str(_RNG.randrange(10**8, 10**9)),
}
NEEDLES = [SECRETS["CG_TEST_V"], SECRETS["CG_TEST_KEY_SEED"]]  # D = 7 is a plain digit: see the config echo below


@pytest.mark.slow
def test_no_secret_in_published_outputs_or_logs(tiny_release: Path) -> None:
    text = tiny_release.read_text()
    text = text.replace(
        "{method: cell_key, D: 5, V: 3, js: 2}", "{method: cell_key, D: {env: CG_TEST_D}, V: {env: CG_TEST_V}, js: 2}"
    )
    text = text.replace(
        "  household_columns: [region]\n",
        "  household_columns: [region]\n  record_key: {generate_seed: {env: CG_TEST_KEY_SEED}}\n",
    )
    tiny_release.write_text(text)
    tiny_microdata().drop(columns="rkey").to_parquet(tiny_release.parent / "data" / "persons.parquet")
    env = {
        **os.environ,
        **SECRETS,
        "PREFECT_HOME": str(tiny_release.parent / ".prefect"),
        "COLUMNS": "200",
        "PREFECT_LOGGING_LEVEL": "DEBUG",
    }
    run = subprocess.run(
        [sys.executable, "-m", "cli.main", "release", str(tiny_release), "--log-json"],
        cwd=tiny_release.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    logs = run.stdout + run.stderr
    assert "Flow run" in logs or "flow run" in logs.lower()  # Prefect's own logging was on
    _structured(run.stderr)
    out = tiny_release.parent / "out"
    scanned = 0
    for path in out.rglob("*"):
        if path.is_file() and "internal" not in path.relative_to(out).parts:
            data = path.read_bytes()
            scanned += 1
            for needle in NEEDLES:
                assert needle.encode() not in data, f"secret {needle} found in {path}"
    assert scanned > 20
    prefect_files = [p for p in (tiny_release.parent / ".prefect").rglob("*") if p.is_file()]
    assert any(p.suffix == ".db" for p in prefect_files)  # Prefect's database: runs, states, parameters, events
    for path in prefect_files:
        data = path.read_bytes()
        for needle in NEEDLES:
            assert needle.encode() not in data, f"secret {needle} found in {path}"
    for needle in NEEDLES:
        assert needle not in logs
    assert "CG_TEST_D" not in logs and "{'env'" not in logs


def _structured(stderr: str) -> None:
    """``--log-json``: every step's start and end as JSON lines, with seconds and the gates' verdict."""
    from cubeguard.release.steps import STEPS

    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith('{"time"')]
    events = {(e.get("step"), e.get("event")) for e in lines}
    for step in STEPS:
        assert {(step.name, "started"), (step.name, "done")} <= events, (step.name, lines)
    done = [e for e in lines if e.get("event") == "done"]
    assert all(isinstance(e["seconds"], float | int) and e["level"] == "info" and e["flow_run_id"] for e in done)
    assert [e["verdict"] for e in done if e["step"] == "gate"] == ["passed"]
    assert any(e["message"].startswith("published ") for e in lines)
