"""A release's input files: generate the synthetic census when asked and absent; hash every input.

:func:`input_checksums` covers every file a release reads: the microdata (and a CSV's metadata
file), the classification and ``.hrc`` files, and the files its methods read (p-tables). The run
key and the audit record both take them from here, by content.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cubeguard.audit.record import sha256_file
from cubeguard.config.load import Release
from cubeguard.errors import CubeguardError
from cubeguard.methods.registry import method_of
from cubeguard.microdata.read import count_records


def input_files(release: Release) -> list[Path]:
    """Every file the release reads, microdata first (classification files, p-tables, ...)."""
    spec = release.config.input
    files = [spec.microdata]
    meta = getattr(spec.csv, "metadata", None) if spec.csv is not None else None
    if isinstance(meta, Path):
        files.append(meta)
    files += release.sources
    for step in [*release.config.pre_tabular, *release.config.steps]:
        files += method_of(step).files(step)
    return list(dict.fromkeys(files))


def input_checksums(release: Release) -> dict[str, str]:
    """SHA-256 of every input file that exists, by path."""
    return {str(f): content_hash(f) for f in input_files(release) if f.is_file()}


def content_hash(path: Path) -> str:
    """SHA-256 of a file's content, computed once per process while the file is untouched.

    Untouched means the same inode, size, modification and change time: the change time moves on
    every write and on every ``utime``, so an edit that restores the size and modification time
    (``cp -p``, ``rsync -t``) is still seen.
    """
    st = path.stat()
    return _hash(str(path.resolve()), (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))


@functools.lru_cache(maxsize=64)
def _hash(path: str, stamp: tuple[int, int, int, int]) -> str:
    return sha256_file(path)


def missing_microdata(path: Path) -> CubeguardError:
    """The error for a microdata file that does not exist and that no ``input.synthetic`` generates."""
    return CubeguardError(
        f"microdata file {path} does not exist; fix input.microdata or add input.synthetic to generate one"
    )


def ensure_microdata(release: Release, progress: Callable[[str, int], None] | None = None) -> dict[str, Any]:
    """Return a summary of the input, generating it first if ``input.synthetic`` says so."""
    spec = release.config.input
    if spec.microdata.exists():
        return {"path": str(spec.microdata), "generated": False, "records": count_records(spec)}
    if spec.synthetic is None:
        raise missing_microdata(spec.microdata)
    from cubeguard.synth import generate

    syn = spec.synthetic
    summary = generate(
        syn.persons,
        syn.seed,
        spec.microdata.parent,
        geography=syn.geography,
        progress=(lambda n: progress("synth", n)) if progress else None,
    )
    produced = spec.microdata.parent / "persons.parquet"
    if produced != spec.microdata:
        produced.rename(spec.microdata)
    return {"path": str(spec.microdata), "generated": True, "records": count_records(spec), "synth": str(summary)}
