"""SHA-256 checksums of every file in a folder, as the public manifest lists them."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

BLOCK = 1 << 20  # files are read in 1 MiB blocks, so memory stays bounded for any file size


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of one file, streamed in 1 MiB blocks.

    Args:
        path: The file to hash.

    Returns:
        The 64-character lower-case hex digest.
    """
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


def tree_checksums(folder: Path) -> dict[str, str]:
    """Hex SHA-256 of every file under ``folder``, keyed by its posix path relative to ``folder``.

    Symbolic links to folders are not followed; keys are sorted, so the mapping (and its JSON) is
    the same for the same files whatever order the filesystem lists them in.

    Args:
        folder: The root of the tree.

    Returns:
        ``{"store.zarr/c1/zarr.json": "9f86...", ...}`` in sorted key order.
    """
    files = [Path(top, name) for top, _, names in os.walk(folder) for name in names]
    found = {p.relative_to(folder).as_posix(): p for p in files}
    return {rel: file_sha256(found[rel]) for rel in sorted(found)}
