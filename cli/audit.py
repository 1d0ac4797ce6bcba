"""``cubeguard audit``: list, show and verify the audit store; reproduce a recorded release."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from cli.errors import user_errors
from cubeguard.audit.store import AuditStore
from cubeguard.errors import CubeguardError

app = typer.Typer(
    help="The internal audit trail of release runs.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
)
out = Console()

# CONFIG comes first, as in every other command; --url opens a store without its config.
CONFIG = typer.Argument(None, help="Release config whose audit store to open (output.audit_url or its default file).")
URL = typer.Option(None, "--url", help="SQLAlchemy URL of the audit store, instead of CONFIG.")
CONFIG_AND_ID = typer.Argument(
    ...,
    metavar="[CONFIG] ID",
    help="The release config (left out with --url), then the record: seq number, run id prefix or hash prefix.",
)


def config_and_ref(items: list[str], url: str | None) -> tuple[Path | None, str]:
    """``[CONFIG] ID`` as given: the config may be left out only when ``--url`` names the store."""
    if len(items) == 2:
        return Path(items[0]), items[1]
    if len(items) == 1 and url:
        return None, items[0]
    if len(items) == 1:
        raise CubeguardError(f"give the release config before the record id: CONFIG {items[0]} (or --url URL)")
    raise CubeguardError(f"give the release config and one record id, not {len(items)} values: CONFIG ID")


def open_store(config: Path | None, url: str | None) -> AuditStore:
    """The audit store named by ``--url`` or by a release config (its ``output.audit_url`` or default file)."""
    if url:
        return AuditStore(url, create=False)
    if config is None:
        raise CubeguardError("say which audit store to open: give the release config (CONFIG) or --url URL")
    from cubeguard.config import load_release
    from cubeguard.pipeline.auditing import audit_store_of

    return audit_store_of(load_release(config), create=False)


@app.command("list")
@user_errors
def list_(config: Path = CONFIG, url: str = URL) -> None:
    """One line per recorded run attempt: when, who, outcome, release id."""
    table = Table(title="Audit records")
    for col in ("seq", "run", "attempt", "finished", "user", "outcome", "release", "hash"):
        table.add_column(col)
    with open_store(config, url) as store:
        for stored in store.records():
            rec = stored.record
            table.add_row(str(stored.seq), rec.run_id[:8], str(rec.attempt), rec.finished_at[:19], rec.user,
                          rec.outcome, rec.release_id or "-", stored.hash[:12])  # fmt: skip
    out.print(table)


@app.command()
@user_errors
def show(items: list[str] = CONFIG_AND_ID, url: str = URL) -> None:
    """One record (by seq number, run id prefix or hash prefix); secret values and seeds are withheld."""
    config, ref = config_and_ref(items, url)
    with open_store(config, url) as store:
        stored = store.get(int(ref) if ref.isdigit() else ref)
        data = {"seq": stored.seq, "hash": stored.hash, "prev_hash": stored.prev_hash, **stored.record.redacted()}
    out.print_json(json.dumps(data, default=str))


@app.command()
@user_errors
def verify(
    config: Path = CONFIG, url: str = URL, files: bool = typer.Option(True, help="Check published files.")
) -> None:
    """Check the hash chain and that published files still match their checksums (exit 1 if not)."""
    from rich.markup import escape

    from cubeguard.audit.verify import verify as verify_store

    with open_store(config, url) as store:
        report = verify_store(store, check_files=files)
    if report.ok:
        out.print(f"[green]{escape(report.summary())}[/]", highlight=False)
        return
    out.print(f"[bold red]{escape(report.summary())}[/]", highlight=False)
    raise typer.Exit(1)


@app.command()
@user_errors
def reproduce(
    items: list[str] = CONFIG_AND_ID,
    url: str = URL,
    into: Path = typer.Option(
        None, "--into", help="Where to put the rerun's temporary folder (default: the system's temporary folder)."
    ),
) -> None:
    """Rerun a published release from its record and compare every published file bit for bit.

    The rerun (unprotected counts, an audit record with the secrets) lives in a temporary folder
    that is removed afterwards; only the comparison printed here remains.
    """
    from cli.runtime import freeze_heap, launch_ephemeral_server, prefect_env

    config, ref = config_and_ref(items, url)
    with open_store(config, url) as store:
        record = store.get(int(ref) if ref.isdigit() else ref).record
    if into is not None:
        into.mkdir(parents=True, exist_ok=True)
    prefect_env()
    server = launch_ephemeral_server()
    from flows.reproduce import reproduce_release

    freeze_heap()
    if server is not None:
        server.wait_ready()
    comparison = reproduce_release(record, into)
    out.print(
        f"Reran release {record.release_id} in a temporary folder, now removed: {len(comparison.same)} file(s) "
        f"identical, {len(comparison.different)} different, {len(comparison.missing)} missing, "
        f"{len(comparison.extra)} extra."
    )
    for name in (comparison.different + comparison.missing + comparison.extra)[:20]:
        out.print(f"  - {name}", markup=False, highlight=False)
    if not comparison.identical:
        out.print("[bold red]Not reproduced bit for bit.[/]")
        raise typer.Exit(1)
    out.print("[green]Reproduced bit for bit.[/]")
