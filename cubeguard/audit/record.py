"""One audit record per release attempt, and the checksums and versions it is made of.

A record says who ran what, when, on which inputs, with which code, libraries, config (secrets
included: the audit store is the only place they are kept), seeds and gate results, and what was
published. The store hashes its canonical JSON (:func:`canonical_json`) into a chain, so the JSON
must be byte-for-byte stable: sorted keys, no whitespace, UTF-8, Python's shortest round-trip
float repr, and non-finite floats as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
import numbers
import platform
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from cubeguard.audit.errors import AuditStoreError

BLOCK_SIZE = 1 << 20
LIBRARIES = (
    "numpy", "pandas", "xarray", "zarr", "dask", "numba", "scipy", "pyarrow",
    "prefect", "great-expectations", "pandera", "nlopt",
)  # fmt: skip
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Outcome = Literal["published", "blocked", "failed", "running"]


class AuditRecord(BaseModel):
    """What one attempt of a release run did; frozen, unknown keys rejected.

    ``config_text`` (the resolved config YAML), ``secrets`` (resolved secret values by YAML key
    path) and ``seeds`` (every seed the run used, record-key and swap seeds included) hold secrets:
    they are kept out of ``repr`` and out of :meth:`redacted`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="strings")

    run_id: str = Field(min_length=1)
    attempt: int = Field(ge=1)
    started_at: str
    finished_at: str
    user: str
    host: str
    config_path: str
    config_hash: Sha256
    config_text: str = Field(repr=False)
    secrets: dict[str, Any] = Field(default_factory=dict, repr=False)
    input_checksums: dict[str, Sha256] = Field(default_factory=dict)
    code: dict[str, Any]
    libraries: dict[str, str]
    seeds: dict[str, int] = Field(default_factory=dict, repr=False)
    gates: list[dict[str, Any]] = Field(default_factory=list)
    outputs: dict[str, Sha256] = Field(default_factory=dict)
    release_id: str | None = None
    published_path: str | None = None
    outcome: Outcome
    error: str | None = None

    @field_validator("started_at", "finished_at")
    @classmethod
    def _utc_iso(cls, value: str) -> str:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO-8601 time; use utc_now()") from None
        if moment.utcoffset() != timedelta(0):
            raise ValueError(f"{value!r} is not in UTC; give it with +00:00 (utc_now() does)")
        return value

    @field_validator("outputs")
    @classmethod
    def _relative_posix(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            path = PurePosixPath(name)
            normalised = path.as_posix() == name and name != "." and ".." not in path.parts
            if not normalised or path.is_absolute() or "\\" in name:
                raise ValueError(
                    f"output {name!r} must be a normalised relative posix path inside the published folder"
                )
        return value

    def redacted(self) -> dict[str, Any]:
        """The record as JSON-ready data with secret values, seeds and the config text withheld (for display)."""
        data = self.model_dump(mode="json")
        data["secrets"] = dict.fromkeys(self.secrets, "<withheld>")
        data["seeds"] = dict.fromkeys(self.seeds, "<withheld>")
        data["config_text"] = f"<withheld: {len(self.config_text)} characters>"
        return data


def utc_now() -> str:
    """The current time as an ISO-8601 UTC string with microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


def canonical_json(obj: Any) -> bytes:
    """``obj`` (JSON-like data or a pydantic model) as canonical JSON bytes, the input of the hash chain.

    Raises:
        TypeError: ``obj`` holds something that is not JSON data (e.g. a set, or a non-string key).
    """
    data = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj
    text = json.dumps(_plain(data), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8")


def _plain(value: Any) -> Any:
    """``value`` with tuples as lists, numeric scalars as int/float and non-finite floats as strings."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isfinite(number):
            return number
        return "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("audit record keys must be strings")
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    raise TypeError(f"an audit record cannot hold a {type(value).__name__}; give JSON data")


def sha256_file(path: Path | str) -> str:
    """The SHA-256 hex digest of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(BLOCK_SIZE):
            digest.update(block)
    return digest.hexdigest()


def tree_files(folder: Path | str) -> list[str]:
    """Every file under ``folder`` as a posix path relative to it, sorted.

    Raises:
        AuditStoreError: ``folder`` is not a folder.
    """
    root = Path(folder)
    if not root.is_dir():
        raise AuditStoreError(f"{root} is not a folder; give the folder whose files to checksum")
    return sorted(path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file())


def tree_checksums(folder: Path | str) -> dict[str, str]:
    """SHA-256 of every file under ``folder``, keyed by posix relative path, sorted, streamed."""
    root = Path(folder)
    return {name: sha256_file(root / name) for name in tree_files(root)}


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries a release's numbers depend on (missing ones skipped)."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def code_version() -> dict[str, Any]:
    """The package version of cubeguard, Python's, and the git commit and dirty flag of its work tree.

    ``commit`` and ``dirty`` are None when the package does not live in a git work tree that
    tracks it (an installed wheel) or git cannot be run. ``dirty`` is True when the work tree has
    any uncommitted change or untracked file, since either may change what a release computes.
    """
    try:
        package = importlib.metadata.version("cubeguard")
    except importlib.metadata.PackageNotFoundError:
        package = None
    commit, dirty = _git_state(Path(__file__).resolve().parents[1])
    return {"package": package, "python": platform.python_version(), "commit": commit, "dirty": dirty}


def _git_state(package_dir: Path) -> tuple[str | None, bool | None]:
    """(HEAD commit, dirty) of the git work tree that tracks ``package_dir``, else (None, None)."""
    tracked = _git(package_dir, "ls-files", "--", "__init__.py")
    commit = _git(package_dir, "rev-parse", "--verify", "HEAD")
    status = _git(package_dir, "status", "--porcelain")
    if not tracked or commit is None or status is None:
        return None, None
    return commit.strip(), bool(status.strip())


def _git(cwd: Path, *args: str) -> str | None:
    """Standard output of ``git args`` run in ``cwd``, or None when git fails or is absent."""
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
