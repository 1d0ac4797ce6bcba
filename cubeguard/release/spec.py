"""One run of a release: its plan (the config with run-time overrides, checked), options and run key.

The entry point builds the run's :class:`~cubeguard.release.plan.ReleasePlan` once and puts it in
the :class:`RunSpec`; the run's first step adds the key; every later step reads the release from
the plan, never from the config file again, and resumes by ``key``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cubeguard.audit.record import code_version
from cubeguard.config.load import Release
from cubeguard.pipeline.inputs import input_checksums
from cubeguard.release.ledger import run_key
from cubeguard.release.plan import ReleasePlan, cached_plan
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
        plan: The run's plan, built once by the entry point (:func:`~cubeguard.release.plan.plan_release`).
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
    plan: ReleasePlan | None = field(default=None, repr=False, compare=False)

    def release_plan(self) -> ReleasePlan:
        """The run's plan: the one the entry point built, else (a spec made without one) loaded once per process.

        A spec without a plan (a test, an older caller) loads it from the config file, cached by the
        file's modification time, with no preflight.
        """
        if self.plan is not None:
            return self.plan
        stamp = Path(self.config_path).stat().st_mtime_ns
        return cached_plan(self.config_path, json.dumps(self.overrides, sort_keys=True, default=str), stamp)

    def release(self) -> Release:
        """The validated release of this run, from its plan (never reloaded by a step)."""
        return self.release_plan().release


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
