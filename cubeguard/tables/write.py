"""Write a release's key store (when its config has ``tables``), and hand it to the published release."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from cubeguard.config.load import Release
from cubeguard.pipeline.tabulation import key_scale, keyed_batches
from cubeguard.secrets import SecretResolver
from cubeguard.tables.keystore import KeyStoreWriter, source_hash

Progress = Callable[[str, int], None]


def write_key_store(
    release: Release, resolver: SecretResolver | None = None, progress: Progress | None = None
) -> Path | None:
    """One pass over the tabulated microdata into ``output.key_store``; None without ``tables``."""
    cfg = release.config
    if cfg.tables is None:
        return None
    spec = cfg.tables
    writer = KeyStoreWriter(
        columns=sorted({release.breakdowns[b].column for b in spec.breakdowns}),
        populations={p: cfg.populations[p] for p in spec.populations},
        household_ref=cfg.input.household_ref,
        values=sorted({m.column for m in spec.means.values()}),
        key_column=cfg.input.record_key.column,
        key_scale=key_scale(release),
    )
    for batch in keyed_batches(release, writer.needs, resolver=resolver):
        writer.add(batch)
        if progress:
            progress("keystore", batch.num_rows)
    return writer.finish(cfg.output.key_store, source_hash(cfg))


def serve_key_store(release: Release, release_id: str) -> Path | None:
    """Move the finished key store to the published release it belongs to (internal)."""
    out = release.config.output
    if release.config.tables is None or not out.key_store.is_dir():
        return None
    target = out.served_store(release_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        shutil.rmtree(target)
    out.key_store.rename(target)
    return target
