"""Bad input stops the command with exit 2 and one sentence, no traceback, nothing published.

The cases are the catalogue in ``cubeguard/testing/bad_inputs.py``. Here run those caught before anything
starts (the config, the command line, the microdata file's header, the output folder): nothing
is written at all. ``test_bad_input_flow.py`` runs the ones found once the release runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cubeguard.testing.bad_inputs import CASES, NOTHING, Case, run_case, within


def check_case(case: Case, tiny_release: Path, tmp_path: Path) -> None:
    """Run ``case`` on a copy of the tiny release and assert its exit, sentence and what it wrote."""
    if case.mounts and os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    got = run_case(case, tiny_release.parent, tmp_path / "run")
    assert got.exit == case.exit, got.stderr
    assert case.message in got.said, got.stderr
    assert "Traceback" not in got.stderr + got.stdout
    assert within(got.written, case.written), got.written


@pytest.mark.parametrize("case", [c for c in CASES if c.written == NOTHING], ids=lambda c: c.name)
def test_bad_input_exits_2_before_anything_is_written(case: Case, tiny_release: Path, tmp_path: Path) -> None:
    check_case(case, tiny_release, tmp_path)
