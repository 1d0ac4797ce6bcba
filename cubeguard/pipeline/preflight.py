"""What can be known before a release starts, checked before anything runs or is written.

:func:`preflight` is the one list of checks that ``cubeguard release`` runs before Prefect starts
and that the release flow runs first (for a run started from the Prefect UI, the only check): every
cube protected and gated, no secret given inline among the overrides, every secret reference
resolves, the release id unused, the microdata read, hold records and have their columns, the
output folder can be written and no other release holds it, and a database audit store answers.

:func:`check_input` reads a Parquet file's footer, or a CSV's header and first batch, never the
records themselves. It runs before the orchestrator starts and before anything is written, so a
wrong path, an unreadable or empty file, a wrong delimiter or a column the config needs but the
file lacks is one sentence (exit 2), with the config key and line where a key names the column.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from cubeguard.audit.store import AuditStore
from cubeguard.config.load import Release
from cubeguard.config.overrides import inline_secret_overrides
from cubeguard.config.protection import require_protection
from cubeguard.config.yamlmap import dotted, load_yaml
from cubeguard.errors import ConfigError, CubeguardError
from cubeguard.methods.registry import MICRODATA_METHODS
from cubeguard.microdata.read import available_columns, count_records
from cubeguard.pipeline.inputs import missing_microdata
from cubeguard.publish.lock import release_lock
from cubeguard.publish.stage import check_unpublished
from cubeguard.secrets import SecretResolver, check_environment_references, resolve_references

KeyPath = tuple[str | int, ...]
#: Where overrides came from: the command line's ``--set`` or a flow run's ``overrides`` (the Prefect UI).
GivenAs = Literal["--set", "overrides"]


def preflight(
    release: Release,
    overrides: Mapping[str, object],
    release_id: str | None,
    resolver: SecretResolver | None = None,
    given_as: GivenAs = "--set",
) -> None:
    """Every check a release passes before anything runs or is written, in one place for CLI and flow.

    Args:
        release: The config, loaded with ``overrides``.
        overrides: The keys changed for this run; a secret among them must be a reference.
        release_id: The published folder name asked for (``None``: one is made up, nothing to check).
        resolver: Resolves secret blocks (the flow's); without it only environment references are
            resolved (the command line's check before Prefect starts).
        given_as: How the overrides were given, for the message that refuses an inline secret.

    Raises:
        CubeguardError: the first check that fails, in one sentence saying what to change.
    """
    require_protection(release)  # every cube protected and gated, or the config says why not
    refuse_inline_secrets(release, overrides, given_as)
    if resolver is None:
        check_environment_references(release.config)  # secret blocks resolve in the flow, once Prefect runs
    else:
        resolve_references(release.config, resolver)  # every secret reference resolves, or exit 2 now
    if release_id is not None:
        check_unpublished(release, release_id)  # a bad or used id stops the run now, not at publish time
    check_input(release)  # the microdata read, hold records and have their columns
    check_output(release)  # the output folder can be written and no other release holds it
    check_audit_store(release)  # a database audit store answers now, not after the release's work


def refuse_inline_secrets(release: Release, overrides: Mapping[str, object], given_as: GivenAs = "--set") -> None:
    """Stop before anything runs when an override gives a secret inline (it would be a flow-run parameter).

    The message names the keys, never a value.

    Raises:
        CubeguardError: naming the keys and how to give the secrets by reference instead.
    """
    found = inline_secret_overrides(release.config, overrides)
    if not found:
        return
    keys, secret = ", ".join(found), next(iter(found.values()))
    if given_as == "--set":
        raise CubeguardError(
            f"--set {keys}: secrets given inline would be stored and shown among Prefect's flow-run "
            f"parameters; pass them by reference instead, e.g. --set '{secret}={{env: NAME}}' with the "
            "value in environment variable NAME, or write them in the config YAML"
        )
    raise CubeguardError(
        f"overrides {keys}: a secret given inline is refused, and nothing was run or written; this flow "
        "run's parameters hold it, so delete the run in the Prefect UI, then give the secret by reference, "
        f'e.g. overrides {{"{secret}": {{"env": "NAME"}}}} with the value in environment variable NAME '
        "where the flow runs, or write it in the config YAML"
    )


def check_input(release: Release) -> None:
    """Stop now if the microdata cannot be read, hold no records or lack a column the config needs.

    A microdata file that ``input.synthetic`` will generate is not checked (it does not exist yet).

    Raises:
        CubeguardError: the file is missing, a folder, unreadable or without records.
        ConfigError: columns are missing, each located at the config key that needs it.
    """
    spec = release.config.input
    if not spec.microdata.exists() and spec.synthetic is not None:
        return
    if not spec.microdata.exists():
        raise missing_microdata(spec.microdata)
    present = set(available_columns(spec))  # raises on a folder, a corrupt file, a header-only CSV
    if count_records(spec) == 0:
        raise CubeguardError(f"microdata {spec.microdata} has no records; point input.microdata at the census file")
    missing = {col: path for col, path in needed_columns(release).items() if col not in present}
    if missing:
        doc = load_yaml(release.path)
        problems = []
        for col, path in missing.items():
            line = doc.line_of(path)
            where = f"{release.path.name} line {line}" if line else release.path.name
            problems.append(
                f"{dotted(path)} ({where}): the microdata have no column {col!r}; "
                "rename the column in the file or fix the config"
            )
        raise ConfigError(release.path, problems)


def needed_columns(release: Release) -> dict[str, KeyPath]:
    """Every microdata column the release reads, with the first config key that asks for it."""
    cfg = release.config
    inp = cfg.input
    needed: dict[str, KeyPath] = {}

    def need(column: str | None, path: KeyPath) -> None:
        if column:
            needed.setdefault(column, path)

    for name, var in cfg.variables.items():
        need(var.column, ("variables", name, "column"))
    if inp.record_key.generate_seed is None:
        need(inp.record_key.column, ("input", "record_key", "column"))
    need(inp.person_id, ("input", "person_id"))
    need(inp.household_id, ("input", "household_id"))
    for name, pop in cfg.populations.items():
        for col in pop.where:
            need(col, ("populations", name, "where", col))
        if pop.unit == "households":
            need(inp.household_ref, ("input", "household_ref"))
    for i, step in enumerate(cfg.pre_tabular):
        method = MICRODATA_METHODS[step.method]
        for col in method.columns(step.with_ids(inp.household_id, inp.person_id)):
            need(col, ("pre_tabular", i))
    return needed


def check_output(release: Release) -> None:
    """Stop now if ``output.folder`` is a file, cannot be written, or another release holds it.

    Raises:
        CubeguardError: naming the folder and what to change; ``ReleaseLocked`` when a release runs.
    """
    folder = release.config.output.folder
    if folder.exists() and not folder.is_dir():
        raise CubeguardError(f"output.folder {folder} is a file; move it or set output.folder to a folder")
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        raise CubeguardError(f"output.folder {folder}: {existing} is a file; move it or set output.folder elsewhere")
    if not os.access(existing, os.W_OK | os.X_OK):  # a read-only file system refuses even root
        raise CubeguardError(
            f"output.folder {folder} cannot be written ({_why(existing)}); set output.folder to a writable folder"
        )
    if folder.is_dir():
        with release_lock(folder):  # raises at once if a running release holds it
            pass


def check_audit_store(release: Release) -> None:
    """Stop now if ``output.audit_url`` names a database that cannot be opened (down, wrong URL, refused).

    The default SQLite file is created when the release first records; a database store is opened
    (its table created if it has none) and closed, so a release never does its work only to find
    that its audit record cannot be committed.

    Raises:
        AuditStoreError: in one sentence naming the store (password masked) and what to check.
    """
    url = release.config.output.audit_url
    if url:
        AuditStore(url).close()


def _why(path: Path) -> str:
    try:
        probe = os.statvfs(path)
    except OSError:
        return "no access"
    return "its file system is read-only" if probe.f_flag & os.ST_RDONLY else "no write permission"
