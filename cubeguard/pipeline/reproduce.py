"""Rerun a recorded release from its audit record and compare the outputs bit for bit.

The rerun uses the recorded config text (so later edits of the config file do not matter), the
recorded secret values (given back by reference to environment variables, never written to disk
or to the flow run's parameters), the same microdata (checked against the recorded SHA-256) and a
scratch output folder with its own audit store, so neither the published release nor its audit
trail is touched. The scratch holds unprotected counts and a record with the secrets: the caller
runs it in a temporary folder and removes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cubeguard.audit.record import AuditRecord, sha256_file
from cubeguard.errors import CubeguardError
from cubeguard.pipeline.auditing import OVERRIDES_MARK
from cubeguard.publish.manifest import MANIFEST_NAME


@dataclass(frozen=True)
class ReproducePlan:
    """How to rerun a record: a config file beside the original (its relative paths hold), overrides, a release id."""

    config: Path
    overrides: dict[str, Any]
    release_id: str
    expected: dict[str, str]
    env: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Comparison:
    """Published files of the rerun against the record (``manifest.json`` holds a time, so it is skipped)."""

    same: list[str] = field(default_factory=list)
    different: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        """Every recorded file reproduced bit for bit, and nothing more."""
        return not (self.different or self.missing or self.extra) and bool(self.same)


def recorded_overrides(config_text: str) -> tuple[str, dict[str, Any]]:
    """Split a recorded config text into the file's text and the run's overrides."""
    head, mark, tail = config_text.rpartition("\n" + OVERRIDES_MARK)
    if not mark:
        return config_text, {}
    return head + "\n", json.loads(tail.strip())


def plan_reproduction(record: AuditRecord, scratch: Path) -> ReproducePlan:
    """Write the recorded config next to the original and say how to rerun it into ``scratch``."""
    if record.outcome != "published" or not record.release_id:
        raise CubeguardError(f"run {record.run_id} ended {record.outcome}; only published releases can be reproduced")
    text, overrides = recorded_overrides(record.config_text)
    original = Path(record.config_path)
    if not original.parent.is_dir():
        raise CubeguardError(f"the folder of the recorded config {original} is gone; restore it to reproduce")
    config = original.parent / f".reproduce-{record.run_id[:12]}-{original.name}"
    config.write_text(text, encoding="utf-8")
    # Recorded secrets go back in through environment variables, so that they never appear among
    # the flow run's parameters (shown in the Prefect UI) nor in a file.
    env = {f"CUBEGUARD_REPRODUCE_{k}": str(v) for k, v in enumerate(record.secrets.values())}
    refs = {key: {"env": name} for key, name in zip(record.secrets, env, strict=True)}
    # The rerun's record goes to the scratch's own audit store, never to the release's (a URL).
    overrides = {**overrides, **refs, "output.folder": str(scratch), "output.audit_url": None}
    return ReproducePlan(config, overrides, record.release_id, dict(record.outputs), env)


def check_inputs(record: AuditRecord) -> None:
    """Refuse to rerun when a recorded input file is gone or has changed."""
    for path, digest in record.input_checksums.items():
        if not Path(path).is_file():
            raise CubeguardError(f"input {path} of the recorded run is gone; restore it to reproduce the release")
        if sha256_file(path) != digest:
            raise CubeguardError(f"input {path} changed since the recorded run (SHA-256 differs); restore that file")


def compare_outputs(expected: dict[str, str], published: Path) -> Comparison:
    """Compare the checksums of the files under ``published`` with the recorded ones."""
    skip = {MANIFEST_NAME}
    found = {p.relative_to(published).as_posix() for p in published.rglob("*") if p.is_file()} - skip
    wanted = set(expected) - skip
    same: list[str] = []
    different: list[str] = []
    for name in sorted(found & wanted):
        (same if sha256_file(published / name) == expected[name] else different).append(name)
    return Comparison(same, different, sorted(wanted - found), sorted(found - wanted))
