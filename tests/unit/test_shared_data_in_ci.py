"""In CI a test that skips for want of ``../shared`` fails instead (tests/shared_data.py); elsewhere it skips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = """\
import pytest

@pytest.mark.skipif(True, reason="shared course data not present")
def test_needs_shared():
    pass

@pytest.mark.skipif(True, reason="mounting a small file system needs root")
def test_needs_root():
    pass
"""


# a skip at setup (skipif) fails as an error
@pytest.mark.parametrize(("ci", "expected"), [("true", "1 skipped, 1 error"), ("", "2 skipped")])
def test_a_missing_shared_folder_fails_only_in_ci(tmp_path: Path, ci: str, expected: str) -> None:
    (tmp_path / "conftest.py").write_text("from tests.shared_data import pytest_runtest_makereport  # noqa: F401\n")
    (tmp_path / "test_suite.py").write_text(SUITE)
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(tmp_path)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert expected in run.stdout, run.stdout[-2000:]
    assert run.returncode == (1 if ci else 0)
    assert ("CI runs beside ../shared" in run.stdout) == bool(ci)
