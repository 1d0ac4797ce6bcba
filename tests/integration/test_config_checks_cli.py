"""Config problems that need a method's knowledge stop `cubeguard release` with exit 2 before any data is read.

Each case points the config at microdata that do not exist: had the release got as far as reading
them, it would fail with a different message. The output folder must not even be created.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY_CONFIG

CELL_KEY = "  - {method: cell_key, D: 5, V: 3, js: 2}\n"
CASES = {
    "missing p-table file": (
        {},
        "  - {method: cell_key, ptable_file: nowhere.csv}\n",
        r"steps[0].ptable_file (c.yaml line 43): cannot read the p-table file",
    ),
    "infeasible p-table": (
        {},
        "  - {method: cell_key, D: 1, V: 5, js: 2}\n",
        "steps[0] (c.yaml line 43): no p-table exists for these parameters",
    ),
    "stacked cell key steps": (
        {},
        CELL_KEY + "  - {method: cell_key, name: again, D: 4, V: 2, cubes: [c2]}\n",
        "steps[1].cubes (c.yaml line 44): cube 'c2' (and 0 more) is already perturbed by steps[0] (cell_key); "
        "restrict 'cubes' or set allow_stacking: true",
    ),
    "D out of range by reference": (
        {"CG_TEST_D": "-58213"},
        "  - {method: cell_key, D: {env: CG_TEST_D}, V: 3, js: 2}\n",
        "steps[0].D (c.yaml line 43): input should be greater than or equal to 0",
    ),
    "V out of range by reference": (
        {"CG_TEST_V": "-0.25"},
        "  - {method: cell_key, D: 5, V: {env: CG_TEST_V}, js: 2}\n",
        "steps[0].V (c.yaml line 43): input should be greater than 0",
    ),
    "fractional D by reference": (
        {"CG_TEST_D": "5.5"},
        "  - {method: cell_key, D: {env: CG_TEST_D}, V: 3, js: 2}\n",
        "steps[0].D (c.yaml line 43): input should be a valid integer, got a number with a fractional part",
    ),
    "a secret key given twice": (
        {},
        "  - method: cell_key\n    D: 4711\n    V: 3\n    D: 8152\n    js: 2\n",
        "steps[0].D (c.yaml lines 44 and 46): the key 'D' is given twice; keep one",
    ),
    "a cube no step protects": (
        {},
        "  - {method: identity}\n",
        "hypercubes[0] (c.yaml line 39): cube 'c1' would be published unprotected: no protection step applies to it",
    ),
    "secret reference holding text": (
        {"CG_TEST_V": "three"},
        "  - {method: cell_key, D: 5, V: {env: CG_TEST_V}, js: 2}\n",
        "steps[0].V (c.yaml line 43): the referenced secret is not a number",
    ),
}


@pytest.mark.parametrize(("env", "steps", "message"), CASES.values(), ids=list(CASES))
def test_method_config_problem_exits_2_before_any_data_is_read(
    tmp_path: Path, env: dict[str, str], steps: str, message: str
) -> None:
    assert CELL_KEY in TINY_CONFIG
    config = tmp_path / "c.yaml"
    config.write_text(TINY_CONFIG.replace(CELL_KEY, steps))
    run = subprocess.run(
        [sys.executable, "-m", "cli.main", "release", str(config)],
        cwd=tmp_path,
        env={**os.environ, **env, "PREFECT_HOME": str(tmp_path / ".prefect"), "COLUMNS": "300"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 2, run.stderr
    assert message in " ".join(run.stderr.split()), run.stderr
    assert "Traceback" not in run.stderr and "persons.parquet" not in run.stderr
    assert not (tmp_path / "out").exists()  # no Zarr node, no output of any kind
    for value in [*env.values(), "4711", "8152"]:  # a secret never reaches a message
        assert value not in run.stderr and value not in run.stdout
