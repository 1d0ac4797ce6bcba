"""How long each step of a release took: ``internal/timings.json``, rewritten after every step.

Wall seconds and this process's CPU seconds per step (work on Dask workers is not in the CPU
figure), with the step's start as a Unix time so that a sampler outside the process (the release
benchmark) can attribute its memory readings to steps. Internal, never published; a failed run
keeps the timings of the steps it finished.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

TIMINGS_FILE = "timings.json"


@dataclass
class StepClock:
    """Times the steps of one run and rewrites ``path`` after each."""

    path: Path
    rows: list[dict[str, float | str]] = field(default_factory=list)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time the step ``name``; its row is written when it ends, however it ends."""
        started, t0, c0 = time.time(), time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.rows.append(
                {
                    "step": name,
                    "started": round(started, 3),
                    "seconds": round(time.perf_counter() - t0, 3),
                    "cpu_seconds": round(time.process_time() - c0, 3),
                }
            )
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self.rows, indent=1) + "\n")
