"""The audit record of one release attempt, assembled from the run and written to the audit store.

Secret values (resolved references, inline values inside the config text) go only into the
internal audit store; nothing here is logged or published.
"""

from __future__ import annotations

import getpass
import json
import socket
from typing import Any

from cubeguard.audit.record import AuditRecord, Outcome, code_version, library_versions, utc_now
from cubeguard.audit.store import AuditStore, StoredRecord
from cubeguard.config.load import Release
from cubeguard.pipeline.inputs import input_checksums
from cubeguard.secrets import SecretResolver, resolve_references

OVERRIDES_MARK = "# overrides of this run: "


def audit_store_of(release: Release, create: bool = True) -> AuditStore:
    """The release's audit store: ``output.audit_url`` if set, else ``internal/audit.sqlite``.

    With ``create=False`` (reading it) a store that does not exist yet is an error, not created.
    """
    url = getattr(release.config.output, "audit_url", None)
    if url:
        return AuditStore(url, create=create)
    return AuditStore.for_path(release.config.output.internal / "audit.sqlite", create=create)


def audit_url_of(release: Release) -> str:
    """The SQLAlchemy URL of the release's audit store (other tables of it, such as the query log)."""
    url = getattr(release.config.output, "audit_url", None)
    return url or f"sqlite:///{(release.config.output.internal / 'audit.sqlite').resolve()}"


def config_text(release: Release, overrides: dict[str, Any]) -> str:
    """The config file's text, followed by the run's overrides as a YAML comment block."""
    text = release.path.read_text(encoding="utf-8")
    if overrides:
        text += "\n" + OVERRIDES_MARK + json.dumps(overrides, sort_keys=True, default=str) + "\n"
    return text


def seeds_of(release: Release, secrets: dict[str, Any]) -> dict[str, int]:
    """Every seed the run used: synthetic census, record keys, swaps, random post-tabular steps (resolved values)."""
    cfg = release.config
    seeds = {k: int(v) for k, v in secrets.items() if k.endswith("seed")}
    if cfg.input.synthetic is not None:
        seeds["input.synthetic.seed"] = cfg.input.synthetic.seed
    gen = cfg.input.record_key.generate_seed
    if isinstance(gen, int):
        seeds["input.record_key.generate_seed"] = gen
    for where, steps in (("pre_tabular", cfg.pre_tabular), ("steps", cfg.steps)):
        for k, step in enumerate(steps):
            value = getattr(step, "seed", None)
            if isinstance(value, int):
                seeds[f"{where}[{k}].seed"] = value
    return seeds


def record_attempt(
    release: Release,
    *,
    run_id: str,
    attempt: int,
    started_at: str,
    outcome: Outcome,
    overrides: dict[str, Any],
    gates: list[dict[str, Any]] | None = None,
    published: dict[str, Any] | None = None,
    error: str | None = None,
    reader: SecretResolver | None = None,
) -> StoredRecord:
    """Append the record of one attempt to the release's audit store and return it."""
    try:
        secrets = resolve_references(release.config, reader)
    except Exception as exc:  # a failed attempt may have failed on exactly this
        secrets, error = {}, error or str(exc)
    record = AuditRecord(
        run_id=run_id,
        attempt=attempt,
        started_at=started_at,
        finished_at=utc_now(),
        user=getpass.getuser(),
        host=socket.gethostname(),
        config_path=str(release.path),
        config_hash=release.config_hash,
        config_text=config_text(release, overrides),
        secrets=secrets,
        input_checksums=input_checksums(release),
        code=code_version(),
        libraries=library_versions(),
        seeds=seeds_of(release, secrets),
        gates=gates or [],
        outputs=(published or {}).get("checksums", {}),
        release_id=(published or {}).get("release_id"),
        published_path=(published or {}).get("path"),
        outcome=outcome,
        error=error,
    )
    with audit_store_of(release) as store:
        return store.append(record)
