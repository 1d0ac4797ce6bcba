"""The table service's allocator tuning takes effect (on this Linux/glibc machine) and turns numpy's huge pages off."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import numpy as np
from service.memory import reuse_freed_memory
print(reuse_freed_memory(), np._core.multiarray._set_madvise_hugepage(False))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's")
def test_reuse_freed_memory_tunes_glibc_and_numpy() -> None:
    # In a child process: the tuning is process-wide and must not leak into the test worker.
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]  # glibc took every option; huge pages were already off
