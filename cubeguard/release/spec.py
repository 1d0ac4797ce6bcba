"""One run of a release: the config (with run-time overrides), its options and the key its outputs depend on.

The run's first step computes a :class:`RunSpec` with its key once; every later step gets it and
reloads the release from it (cheap) rather than receiving large objects, and resumes by ``key``.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cubeguard.audit.record import code_version
from cubeguard.config.load import Release, load_release
from cubeguard.pipeline.inputs import input_checksums
from cubeguard.release.ledger import run_key
from cubeguard.secrets import SecretResolver, resolve_references


@dataclass(frozen=True)
class RunSpec:
    """What every step of one release run needs: config, overrides, run options and the run key.

    Attributes:
        config_path: The release config (YAML).
        overrides: Config keys changed for this run, e.g. ``{"steps[0].js": 3}``.
        key: The run key (:func:`release_key`), set by the first step; empty before.
        fresh: Recompute every step even if an earlier attempt finished it.
        release_id: The published folder name (default ``<name>-<UTC time>``).
        parts: Tabulate in this many row-group partitions at once (for Dask workers).
        run_id: The orchestrator's id of this run (the audit record's ``run_id``).
        attempt: Which attempt of the run this is (1 for the first).
        started_at: When the attempt started (UTC, ISO 8601), for the audit record.
    """

    config_path: str
    overrides: dict[str, Any] = field(default_factory=dict)
    key: str = ""
    fresh: bool = False
    release_id: str | None = None
    parts: int = 1
    run_id: str = "local"
    attempt: int = 1
    started_at: str = ""

    def release(self) -> Release:
        """The validated release of this run (config file plus overrides), loaded once per process.

        Every task reloads the release from the spec; loading and validating ``eu2021.yaml`` takes
        about 0.3 s, which 119 per-cube tasks per step would repeat. The cache is keyed by the config
        file's modification time too, so an edited config is reread (an edited classification file
        it references is not: start a new process).
        """
        stamp = Path(self.config_path).stat().st_mtime_ns
        return _load(self.config_path, json.dumps(self.overrides, sort_keys=True, default=str), stamp)


@functools.lru_cache(maxsize=8)
def _load(config_path: str, overrides: str, stamp: int) -> Release:
    return load_release(config_path, json.loads(overrides) or None)


def release_key(release: Release, reader: SecretResolver | None = None) -> str:
    """Digest of config, overrides, resolved secrets, every input file's content and the code version.

    Internal only: it depends on secret values, so it is kept in the internal folder.
    """
    return run_key(
        {
            "config": release.config_hash,
            "secrets": resolve_references(release.config, reader),
            "inputs": input_checksums(release),
            "code": {k: v for k, v in code_version().items() if k in ("package", "commit")},
        }
    )
