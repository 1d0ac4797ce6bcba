"""Which release steps have finished, for which inputs: a failed run resumes where it stopped.

Each finished step leaves ``internal/steps/<step>.json`` with the run key it was computed for, the
paths it wrote and its small result. A later run with the same key (same config and overrides,
same resolved secrets, same microdata, same code) skips the step and returns the recorded result,
as long as its outputs are still there. Before a step starts, its entry and those of every later
step are removed, so a crash half-way through a step (or a run of another config into the same
folder) can never leave an entry that vouches for outputs it did not write.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def run_key(parts: Mapping[str, Any]) -> str:
    """A digest of everything a release's outputs depend on (internal: it covers secret values)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(frozen=True)
class StepLedger:
    """The finished-step records of one output folder (``internal/steps``).

    ``order`` lists the resumable steps in the order they run: beginning one forgets the later ones.
    """

    folder: Path
    order: tuple[str, ...]

    def lookup(self, step: str, key: str) -> Any | None:
        """The recorded result of ``step`` if it finished for ``key`` and its outputs still exist."""
        try:
            entry = json.loads((self.folder / f"{step}.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        if entry.get("key") != key or not all(Path(p).exists() for p in entry.get("outputs", [])):
            return None
        return entry["result"]

    def begin(self, step: str) -> None:
        """Forget ``step`` and every later step (their outputs are about to be rewritten)."""
        later = self.order[self.order.index(step) :] if step in self.order else (step,)
        for name in later:
            (self.folder / f"{name}.json").unlink(missing_ok=True)

    def record(self, step: str, key: str, result: Any, outputs: Sequence[Path]) -> None:
        """Record that ``step`` finished for ``key``; written atomically (temp file, fsync, rename)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"{step}.json"
        tmp = target.with_suffix(".tmp")
        entry = {"step": step, "key": key, "outputs": [str(p) for p in outputs], "result": result}
        with tmp.open("w") as fh:
            json.dump(entry, fh, default=str)
            fh.flush()
            os.fsync(fh.fileno())
        tmp.replace(target)

    def resume(self, step: str, key: str, fresh: bool = False) -> Any | None:
        """The recorded result of ``step`` for ``key``; else None, with ``step`` and later steps forgotten.

        With ``fresh`` the record is never reused: every step is recomputed.
        """
        done = None if fresh else self.lookup(step, key)
        if done is None:
            self.begin(step)
        return done

    def run(self, step: str, key: str, outputs: Sequence[Path], compute: Callable[[], T]) -> tuple[T, bool]:
        """``compute()`` unless ``step`` already finished for ``key``; returns (result, resumed)."""
        done = self.resume(step, key)
        if done is not None:
            return done, True
        result = compute()
        self.record(step, key, result, outputs)
        return result, False
