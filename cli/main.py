"""The ``cubeguard`` command line: synth, validate, release, attack, export, tau, inspect, schema."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from cli.audit import app as audit_app
from cli.errors import user_errors
from cli.progress import StageBars
from cli.runtime import freeze_heap, launch_ephemeral_server, prefect_env

# No locals in a traceback (they may hold secrets); every command but server and schema is behind user_errors.
app = typer.Typer(
    help="Protect census hypercubes before publication.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,  # typer's rich help shows flags as "<bool>" options; click's plain help is right
)
app.add_typer(audit_app, name="audit")
out = Console()
LOG_JSON_HELP = "Also write the run's or service's log lines as JSON, one object per line, to stderr."


@app.command()
@user_errors
def synth(
    persons: int = typer.Option(..., help="Number of persons."),
    seed: int = typer.Option(2021),
    out_dir: Path = typer.Option(..., "--out", help="Folder to write persons.parquet into."),
    geography: str = typer.Option("national", help="national or two_regions."),
) -> None:
    """Generate a synthetic census (persons in households and communal establishments) as Parquet."""
    from cubeguard.synth import generate

    t0 = time.perf_counter()
    with StageBars({"synth": persons}) as bars:
        summary = generate(persons, seed, out_dir, geography=geography, progress=lambda n: bars.update("synth", n))  # type: ignore[arg-type]
    out.print(f"[green]Wrote[/] {out_dir / 'persons.parquet'} in {time.perf_counter() - t0:.1f} s: {summary}")


@app.command()
@user_errors
def validate(config: Path) -> None:
    """Validate a release's microdata against its config (exit 2 on bad input)."""
    from cubeguard.config import load_release
    from cubeguard.microdata.read import count_records
    from cubeguard.pipeline.preflight import check_input
    from schemas.validate import validate_microdata

    release = load_release(config)
    check_input(release)
    with StageBars({"validate": count_records(release.config.input)}) as bars:
        rep = validate_microdata(
            release, release.config.output.validation_report, progress=lambda n: bars.update("validate", n)
        )
    out.print(f"[green]Valid:[/] {rep.records:,} records pass every rule.")


def parse_sets(items: list[str]) -> dict[str, object]:
    """``["steps[0].js=3", "output.folder=out2"]`` -> overrides (values read as YAML scalars)."""
    import yaml

    from cubeguard.errors import CubeguardError

    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CubeguardError(f"--set {item!r}: write it as KEY=VALUE, e.g. --set steps[0].js=3")
        out[key.strip()] = yaml.safe_load(value)
    return out


@app.command()
@user_errors
def release(
    config: Path,
    sets: list[str] = typer.Option(
        [], "--set", help="Change a config key for this run: KEY=VALUE (repeatable); a secret only as KEY={env: NAME}."
    ),
    release_id: str = typer.Option(None, "--release-id", help="Published folder name (default <name>-<UTC time>)."),
    fresh: bool = typer.Option(False, "--fresh", help="Recompute every step, even those an earlier attempt finished."),
    dask_address: str = typer.Option(
        None, "--dask-address", help="Run tabulation and per-cube tasks on this Dask scheduler."
    ),
    workers: int = typer.Option(
        0,
        "--workers",
        help="Run tabulation and per-cube tasks on a local Dask cluster of N workers (default: none, one process).",
        show_default=False,
    ),
    parts: int = typer.Option(
        0,
        "--parts",
        help="Row-group partitions tabulated at once (default: --workers, or 4 with --dask-address).",
        show_default=False,
    ),
    log_json: bool = typer.Option(False, "--log-json", help=LOG_JSON_HELP),
) -> None:
    """Run a release as a Prefect flow: validate, protect, measure, gate, publish, audit."""
    _json_logs(log_json)
    from service.memory import reuse_freed_memory

    reuse_freed_memory()  # before Prefect and the steps start threads: 0.4-0.6 GB less at 10M persons
    from cubeguard.microdata.read import count_records
    from cubeguard.release.plan import plan_release

    overrides = parse_sets(sets)
    # Planned here to fail before Prefect starts; the flow plans again, with Prefect's secret blocks.
    rel = plan_release(str(config), overrides, release_id=release_id).release
    spec = rel.config.input
    n = count_records(spec) or (spec.synthetic.persons if spec.synthetic else None)
    prefect_env()
    server = launch_ephemeral_server()  # starts while the flows import
    from cubeguard.attack import ATTACKS
    from flows.release import release_flow, with_dask
    from tasks.progress import set_sink

    freeze_heap()
    if server is not None:
        server.wait_ready()

    cubes = len(rel.config.hypercubes)
    totals = {"synth": n, "validate": n, "tabulate": n, "keystore": n, "write": cubes, "protect": cubes, "swap": n,
              "publish": cubes * (1 + len(rel.config.output.exports)),
              "attack": len(ATTACKS), "attack (unprotected)": len(ATTACKS)}  # fmt: skip
    t0 = time.perf_counter()
    flow_fn = with_dask(release_flow, dask_address, workers)
    with StageBars(totals) as bars:
        set_sink(bars.update)
        try:
            n_parts = parts or workers or (4 if dask_address else 1)
            result = flow_fn(str(config.resolve()), overrides, release_id, fresh, n_parts)
        finally:
            set_sink(None)
    _print_summary(result, time.perf_counter() - t0)


def _print_summary(result: dict, seconds: float) -> None:  # type: ignore[type-arg]
    """One row per cube: size, sparsity, and what protection changed."""
    table = Table(title=f"Release {result['release_id']}")
    cols = ("cube", "dims", "cells", "total", "zeros", "steps", "changed", "1s+2s")
    for col in cols:
        table.add_column(col, justify="left" if col in ("cube", "steps") else "right", no_wrap=True)
    protection = {p["cube_id"]: p for p in result["protection"]}
    for c in result["cubes"]:
        p = protection[c["cube_id"]]
        table.add_row(
            c["cube_id"],
            str(c["dims"]),
            f"{c['cells']:,}",
            f"{c['total']:,}",
            f"{c['zero_share']:.1%}",
            ", ".join(p["steps"]) or "-",
            f"{p['changed_share']:.1%}",
            f"{p['small_published']:,}",
        )
    out.print(table)
    cells = sum(c["cells"] for c in result["cubes"])
    records = result["validation"]["records"]
    out.print(f"{len(result['cubes'])} cubes, {cells:,} cells from {records:,} records in {seconds:.1f} s.")
    gates = result.get("gates", {})
    if gates:
        out.print(
            f"[green]Gates passed[/] ({len(result['gates'].get('failures', []))} warning(s)); "
            f"Data Docs: {gates.get('docs')}"
        )
    if result.get("report"):
        out.print(f"Report (internal): {result['report']}")
    out.print(f"[green]Published[/] {result['published']} (audit record {result['audit']['seq']})")


@app.command()
@user_errors
def sweep(config: Path, grid: Path = typer.Option(..., "--grid", help="YAML grid of parameter sets.")) -> None:
    """Run one protection step over a grid of parameter sets on the tabulated cubes; draw the R-U map.

    Needs the release's original store (run ``cubeguard release`` first). Everything written,
    parameters included, stays in ``<output>/internal/sweep/<time>``.
    """
    from cubeguard.config import load_release
    from cubeguard.sweep import load_grid, run_sweep, sweep_folder
    from tasks.secrets import read_prefect_secret

    release_ = load_release(config)
    grid_ = load_grid(grid)
    n_cubes = len(grid_.spec.cubes or release_.config.hypercubes)
    with StageBars({"build": len(grid_.sets), "sweep": len(grid_.sets) * n_cubes}) as bars:
        result = run_sweep(
            release_, grid_, release_.config.output.original_store, sweep_folder(release_),
            progress=bars.update, resolver=read_prefect_secret,
        )  # fmt: skip
    for line in result.lines():  # names sets by number and place in the grid file, never by value
        out.print(line, markup=False, highlight=False)
    out.print(f"R-U map and table (internal): {result.html}")


@app.command()
@user_errors
def deploy(
    ctx: typer.Context,
    config: Path,
    name: str = typer.Option(None, help="Deployment name (default: the release name)."),
    cron: str = typer.Option(None, help="Schedule, e.g. '0 2 * * 1' for Mondays at 02:00."),
    log_json: bool = typer.Option(False, "--log-json", help=LOG_JSON_HELP),
) -> None:
    """Register the release as a Prefect deployment and run its runs (schedules, reruns from the UI) until stopped.

    Needs a Prefect server: start one with ``cubeguard prefect-server`` and set PREFECT_API_URL as it says.
    """
    _renamed_from(ctx, "serve", "deploy")
    _json_logs(log_json)
    import os

    from cubeguard.errors import CubeguardError

    if not os.environ.get("PREFECT_API_URL"):
        raise CubeguardError(
            "set PREFECT_API_URL to a Prefect server (start one with 'cubeguard prefect-server') first"
        )
    prefect_env()
    from flows.deploy import serve_release

    serve_release(config, name, cron)


@app.command()
@user_errors
def attack(
    config: Path,
    sets: list[str] = typer.Option([], "--set", help="Change a config key, e.g. output.folder=DIR (repeatable)."),
    release_id: str = typer.Option(
        None, "--release-id", help="Attack this published release (it must be the config's last run)."
    ),
    service: str = typer.Option(
        None, "--service", help="Also attack the tables this table service answers (URL, e.g. http://127.0.0.1:8000)."
    ),
) -> None:
    """Attack the release's protected cubes as an intruder who knows the methods would; exit 1 if one gives way.

    Feasibility intervals, differencing, linking and averaging, each also run on the unprotected
    counts (its self-test). Needs the release's stores (run ``cubeguard release`` first). With
    ``--service``, every table of one or two variables the service answers is attacked beside the
    cubes of the release it serves. The findings, which name the cells recovered, stay in
    ``<output>/internal/attack.json`` (``attack_service.json`` with ``--service``).
    """
    from cubeguard.attack import ATTACKS
    from cubeguard.config import load_release
    from cubeguard.pipeline.attack import attack_step, read_attack, write_attack
    from cubeguard.publish.stage import check_release_id, published_root
    from tasks.secrets import read_prefect_secret

    release_ = load_release(config, parse_sets(sets) or None)
    if service:
        report = _attack_service(config, sets, service)
        path = write_attack(report, release_.config.output.internal / "attack_service.json")
    else:
        store = published_root(release_) / check_release_id(release_id) / "store.zarr" if release_id else None
        with StageBars({"attack": len(ATTACKS), "attack (unprotected)": len(ATTACKS)}) as bars:
            path = attack_step(release_, read_prefect_secret, bars.update, published=store)
        found = read_attack(release_)
        assert found is not None
        report = found
    out.print(_attack_table(report, _cubes_or_tables) if service else _attack_table(report))
    bound = release_.config.gates.max_recovered_by_attack or 0
    worst = max((report.recovered(f.cube) for f in report.published), default=0)
    for name in report.broken:
        out.print(f"Attack {name} failed its self-test: it missed small cells of the unprotected counts.")
    out.print(f"Findings (internal, they name the cells): {path}")
    if worst > bound or report.broken:
        out.print(f"A cube gives way: {worst} small cell(s) recovered with certainty (allowed: {bound}).")
        raise typer.Exit(1)


def _attack_service(config: Path, sets: list[str], url: str) -> Any:
    """The cubes of the release ``url`` serves and every table of one or two variables it answers, attacked."""
    from cubeguard.attack import ATTACKS
    from cubeguard.pipeline.attack import cube_views
    from cubeguard.publish.stage import published_root
    from cubeguard.tables.attack import attack_tables
    from cubeguard.tables.served import open_served
    from service.intruder import ask_tables
    from tasks.secrets import read_prefect_secret

    with StageBars({"tables asked": None}) as bars:
        asked = ask_tables(url, progress=lambda _done, _total: bars.update("tables asked", 1))
    engine = open_served(config, asked.release_id, parse_sets(sets) or None)
    store = published_root(engine.release) / asked.release_id / "store.zarr"
    cubes = cube_views(engine.release, read_prefect_secret, store)
    with StageBars({"attack": len(ATTACKS), "attack (unprotected)": len(ATTACKS)}) as bars:
        found = attack_tables(engine, asked.answers, progress=bars.update, cubes=cubes)
    refused = ", ".join(f"{n} by {rule}" for rule, n in sorted(asked.refused.items())) or "none"
    out.print(f"Release {asked.release_id}: {len(cubes[0])} cubes and {found.tables} tables of the service attacked "
              f"together ({found.derived} with persons derived from households left out; refused: {refused}).")  # fmt: skip
    return found.report


def _attack_table(report: object, group: Callable[[str], str] = str) -> Table:
    """One row per attack and cube, or per attack and ``group`` of cubes (counts summed)."""
    from cubeguard.attack import AttackReport

    assert isinstance(report, AttackReport)
    table = Table(title="Attacks on the published cubes: small cells (1s, 2s) recovered with certainty, "
                  "within 1-2, best guess right, base rate (self-test on the unprotected counts in brackets)")  # fmt: skip
    for name in ("attack", "cube", "small", "certain", "in 1-2", "guess", "base"):
        left = name in ("attack", "cube")
        table.add_column(name, justify="left" if left else "right", no_wrap=left)
    rows: dict[tuple[str, str, bool], list[int]] = {}
    for f in report.facts:
        row = rows.setdefault((f.attack, group(f.cube), f.unprotected), [0, 0, 0, 0, 0])
        for k, value in enumerate((f.targets, f.certain, f.disclosed, f.guessed, f.base_rate)):
            row[k] += value
    for (attack, cube, unprotected), (targets, certain, disclosed, guessed, base) in rows.items():
        if unprotected:
            continue
        u = rows.get((attack, cube, True))
        table.add_row(
            attack, cube, f"{targets:,}", f"{certain:,}" + (f" ({u[1]:,})" if u else ""),
            f"{disclosed:,}", f"{guessed:,}" + (f" ({u[3]:,})" if u else ""), f"{base:,}",
        )  # fmt: skip
    return table


def _cubes_or_tables(cube: str) -> str:
    """``cubes``, or ``tables of <population>`` for a service table (``population:breakdowns``)."""
    return f"tables of {cube.split(':', 1)[0]}" if ":" in cube else "cubes"


@app.command()
@user_errors
def tables(
    config: Path,
    sets: list[str] = typer.Option([], "--set", help="Change a config key, e.g. output.folder=DIR (repeatable)."),
    release_id: str = typer.Option(None, "--release-id", help="Serve this published release (default: the newest)."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, help="Port to listen on."),
    workers: int = typer.Option(1, help="Server processes (each maps the key store; the OS shares its pages)."),
    log_json: bool = typer.Option(False, "--log-json", help=LOG_JSON_HELP),
) -> None:
    """Serve flexible tables of a published release (the config's 'tables' rules): API and page."""
    _json_logs(log_json)
    import os

    import uvicorn

    from cubeguard.config import load_release
    from service.app import create_app
    from service.limits import limits_file
    from service.listen import run_workers
    from service.memory import reuse_freed_memory
    from service.release_choice import forget_choice

    overrides = parse_sets(sets)
    reuse_freed_memory()  # before any thread starts
    # one rate limit for every worker, in the release's internal folder, per address served
    limits = limits_file(load_release(config, overrides or None).config.output.folder, host, port)
    forget_choice(limits)  # serve what this command names, not what a reload chose in an earlier run
    # A config, key store or audit problem stops here (exit 2). With one process this app is the
    # one served; with more, each worker builds its own and this one only checks (no crossings).
    served = create_app(
        config.resolve(), release_id, overrides, precompute=workers == 1, limits=limits, freeze=workers == 1
    )
    _check_port(host, port)
    out.print(f"Flexible tables on http://{host}:{port}/ (API description: /openapi.json)")
    # The client is the socket's peer: uvicorn's proxy headers (which trust X-Forwarded-For from
    # 127.0.0.1 by default) are off; the app reads the header itself from tables.trusted_proxies only.
    if workers == 1:
        uvicorn.run(served, host=host, port=port, log_level="warning", proxy_headers=False)
        return
    os.environ["CUBEGUARD_TABLES_CONFIG"] = str(config.resolve())
    os.environ["CUBEGUARD_TABLES_OVERRIDES"] = json.dumps(overrides)
    os.environ["CUBEGUARD_TABLES_LIMITS"] = str(limits)
    if release_id:
        os.environ["CUBEGUARD_TABLES_RELEASE"] = release_id
    run_workers("service.main:app", host, port, workers)  # uvicorn.run's workers, with TCP_NODELAY (service.listen)


def _renamed_from(ctx: typer.Context, old: str, new: str) -> None:
    """Say so on stderr when a command is called by its name before the rename (``serve``, ``server``)."""
    if ctx.info_name == old:
        typer.echo(f"'cubeguard {old}' is now 'cubeguard {new}'; the old name will go", err=True)


def _json_logs(wanted: bool) -> None:
    """``--log-json``: the run's or service's log lines as JSON on stderr, in this process and its children."""
    if wanted:
        import os

        from cubeguard.logs import ENV

        os.environ[ENV] = "json"


def _check_port(host: str, port: int) -> None:
    """Stop with one sentence (exit 2) when the address cannot be listened on."""
    import socket

    from cubeguard.errors import CubeguardError

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise CubeguardError(
                f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port or --host"
            ) from None


@app.command("prefect-server")
def prefect_server(ctx: typer.Context, port: int = typer.Option(4200), host: str = typer.Option("127.0.0.1")) -> None:
    """Start a local Prefect server with its UI (SQLite under .cubeguard/prefect)."""
    _renamed_from(ctx, "server", "prefect-server")
    import os
    import subprocess
    import sys

    prefect_env()
    out.print(f"Prefect UI on http://{host}:{port}; in another shell: export PREFECT_API_URL=http://{host}:{port}/api")
    cmd = [sys.executable, "-m", "prefect", "server", "start", "--host", host, "--port", str(port)]
    raise typer.Exit(subprocess.call(cmd, env={**os.environ, "PREFECT_LOGGING_LEVEL": "WARNING"}))


class PTableFormat(StrEnum):
    """P-table file formats."""

    r = "r"
    tau = "tau"


class NumType(StrEnum):
    """Row types of a numeric p-table (R ptable's create_num_ptable)."""

    all = "all"
    even = "even"
    odd = "odd"


@app.command()
@user_errors
def ptable(
    D: int = typer.Option(..., "--D", help="Maximum absolute noise."),
    V: float = typer.Option(..., "--V", help="Noise variance."),
    js: int = typer.Option(None, "--js", help="No perturbed values in 1..js (counts; default 0)."),
    pstay: float = typer.Option(None, "--pstay", help="Lower bound of the probability of no change (counts)."),
    optim: str = typer.Option(
        "1",
        "--optim",
        help="1: variance as inequality, 4: as equality; with --numeric one per --icat entry, e.g. 4,1,1.",
    ),
    mono: bool = typer.Option(True, "--mono/--no-mono", help="Monotony constraints (R ptable's mono)."),
    numeric: bool = typer.Option(False, "--numeric", help="A numeric p-table (R ptable's create_num_ptable)."),
    step: int = typer.Option(None, "--step", help="Numeric: the noise grid has step 1/step (default 2)."),
    icat: str = typer.Option(None, "--icat", help="Numeric: the points i, holding 1 and D, e.g. 1,5,10."),
    kind: NumType = typer.Option(None, "--type", help="Numeric: the rows' type (default all)."),
    out_file: Path = typer.Option(..., "--out", help="The p-table file to write."),
    fmt: PTableFormat = typer.Option(
        "r",
        "--format",
        help="r: R ptable's CSV (i, j, p, v, p_int_lb, p_int_ub, type); tau: tau-ARGUS's p-table (i;j;p;v;p_int_ub).",
    ),
    plot: Path = typer.Option(None, "--plot", help="Also draw the noise distributions to this PNG (counts)."),
    risk: Path = typer.Option(None, "--risk", help="Also draw P(original | published) (uniform prior) to this PNG."),
) -> None:
    """Build a maximum-entropy p-table for the cell key method (as R ptable's create_cnt_ptable or create_num_ptable)."""
    from cli.ptables import COUNT_ONLY, NUMERIC_ONLY, check_kind, numeric_ptable, parse_ints

    given = (js, pstay, plot, risk, fmt == PTableFormat.tau, step, icat, kind)
    named = [name for name, value in zip(COUNT_ONLY + NUMERIC_ONLY, given, strict=True) if value not in (None, False)]
    check_kind(numeric, [n for n in named if n in COUNT_ONLY], [n for n in named if n in NUMERIC_ONLY])
    if numeric:
        rows = numeric_ptable(D, V, step, icat, optim, mono, kind, out_file).i.size
        out.print(f"[green]Wrote[/] {out_file} ({rows} rows)")
        return
    _count_ptable(D, V, js or 0, pstay, parse_ints(optim, "--optim"), mono, out_file, fmt, plot, risk)


def _count_ptable(
    D: int,
    V: float,
    js: int,
    pstay: float | None,
    optim: tuple[int, ...],
    mono: bool,
    out_file: Path,
    fmt: PTableFormat,
    plot: Path | None,
    risk: Path | None,
) -> None:
    from cubeguard.ckm.ptable import PTableParams, create_cnt_ptable
    from cubeguard.errors import CubeguardError

    if len(optim) != 1:
        raise CubeguardError("--optim takes one value (1 or 4) for count p-tables; lists are for --numeric.")
    table = create_cnt_ptable(PTableParams(D=D, V=V, js=js, pstay=pstay, optim=optim[0], mono=mono))  # type: ignore[arg-type]
    from cubeguard.ckm.ptable_io import write_ptable

    out_file.parent.mkdir(parents=True, exist_ok=True)
    write_ptable(table, out_file, "tau" if fmt == PTableFormat.tau else "ptable")
    out.print(f"[green]Wrote[/] {out_file} ({table.i.size} rows)")
    if plot is not None:
        from cubeguard.ckm.ptable_plot import plot_ptable

        plot_ptable(table, plot)
        out.print(f"[green]Wrote[/] {plot}")
    if risk is not None:
        from cubeguard.ckm.risk import posterior_probabilities
        from cubeguard.ckm.risk_plot import plot_risk

        plot_risk(posterior_probabilities(table), risk)
        out.print(f"[green]Wrote[/] {risk}")


@app.command()
@user_errors
def tau(
    config: Path,
    out_dir: Path = typer.Option(..., "--out", help="Folder for microdata, microdata.rda and the .hrc files."),
    fixed: bool = typer.Option(True, "--fixed/--free", help="Fixed-width microdata.asc, or microdata.csv (;)."),
) -> None:
    """Write a release's microdata as tau-ARGUS input: data file, .rda metadata and one .hrc per hierarchy."""
    from cubeguard.config import load_release
    from cubeguard.io.rda import read_rda
    from cubeguard.io.tau_export import export_tau
    from cubeguard.microdata.read import iter_batches

    release = load_release(config)
    cfg = release.config
    spec = cfg.input
    metadata = spec.csv.metadata if spec.format == "tau" and spec.csv else None
    variables = list(reversed(cfg.variables.items()))
    written = export_tau(
        lambda: iter_batches(spec, None),
        out_dir,
        classifications={v.column: v.codes for _, v in variables},
        written={v.column: release.hrc_written.get(name, {}) for name, v in variables},
        source=read_rda(metadata) if metadata else None,
        record_key=spec.record_key.column,
        key_decimals=spec.record_key.decimals,
        household_id=spec.household_id,
        fixed=fixed,
    )
    for path in [written.data, written.metadata, *written.hierarchies.values()]:
        out.print(f"[green]Wrote[/] {path}")
    for note in written.notes:
        out.print(f"[yellow]Note:[/] {note}")


class ExportFormat(StrEnum):
    """Flat export formats."""

    csv = "csv"
    parquet = "parquet"
    sdmx_csv = "sdmx-csv"


class SdmxCsvVersion(StrEnum):
    """SDMX-CSV versions."""

    v2 = "2.0"
    v1 = "1.0"


@app.command()
@user_errors
def export(
    store: Path,
    cube: str = typer.Option(..., help="Cube id."),
    fmt: ExportFormat = typer.Option(ExportFormat.csv, "--format"),
    out_file: Path = typer.Option(None, "--out", help="Output file (default: <cube>.<ext> here)."),
    internal: bool = typer.Option(
        False,
        "--internal",
        help="Export a store that is not a published release, marked INTERNAL - NOT FOR PUBLICATION.",
    ),
    config: Path | None = typer.Option(
        None, "--config", help="Release config whose sdmx section names the SDMX-CSV dataflow, dimensions and codes."
    ),
    sdmx_version: SdmxCsvVersion | None = typer.Option(
        None, "--sdmx-version", help="SDMX-CSV version (default: the config's sdmx.csv_version, else 2.0)."
    ),
) -> None:
    """Write one cube as a flat table (one row per cell).

    A published release's store (``published/<id>/store.zarr``) exports as it is; any other store
    (``original.zarr``, ``protected.zarr``) holds counts that are not public and needs ``--internal``.
    SDMX-CSV uses the names of the config's ``sdmx`` section (``--config``); without one, the
    defaults: agency CUBEGUARD, dataflow CENSUS_<cube>, each breakdown's variable as dimension.
    """
    from cubeguard.cubes.export import INTERNAL_MARK
    from cubeguard.errors import CubeguardError
    from cubeguard.publish.flat import export_flat
    from cubeguard.publish.manifest import is_published_store

    published = is_published_store(store)
    if store.exists() and not published and not internal:  # a missing store: export_cube says so
        raise CubeguardError(
            f"{store} is not a published release (published/<id>/ with a manifest that lists it), so its counts "
            f"are not for publication; export from published/<id>/store.zarr, or add --internal to write them in "
            f"a file marked {INTERNAL_MARK}"
        )
    if config is not None:
        from cubeguard.config import load_release

        sdmx = load_release(config).config.sdmx
    else:
        sdmx = None
    version = None if sdmx_version is None else sdmx_version.value
    target = export_flat(store, cube, fmt.value, out_file, internal=not published, sdmx=sdmx, sdmx_version=version)
    out.print(f"[green]Wrote[/] {target}" + ("" if published else f" ([bold]{INTERNAL_MARK}[/])"))


@app.command()
@user_errors
def sdmx(
    config: Path,
    out_file: Path = typer.Option(..., "--out", help="SDMX-ML 3.0 structure file to write."),
    prepared: str = typer.Option(
        None,
        "--prepared",
        help="Time written in the message header (ISO 8601, e.g. 2026-11-27T00:00:00Z; default now).",
    ),
) -> None:
    """Write the SDMX structures of a release config: code lists, one DSD and one dataflow per cube.

    The names come from the config's ``sdmx`` section, as in its SDMX-CSV exports; point
    ``sdmx.structure`` at the file to have every export checked against it before publication.
    """
    from datetime import UTC, datetime

    from cubeguard.config import load_release
    from cubeguard.config.sdmx_check import release_layouts
    from cubeguard.errors import CubeguardError
    from cubeguard.sdmx.structure import write_structure

    release = load_release(config, {"output.exports": ["csv"]})  # not checked against the file this may write
    try:
        when = datetime.fromisoformat(prepared) if prepared else datetime.now(UTC)
    except ValueError:
        raise CubeguardError(
            f"--prepared {prepared!r} is not an ISO 8601 time; write it as 2026-11-27T00:00:00Z"
        ) from None
    layouts = release_layouts(release.config, release.breakdowns)
    write_structure(layouts, out_file, when if when.tzinfo else when.replace(tzinfo=UTC))
    out.print(f"[green]Wrote[/] {out_file} ({len(layouts)} dataflows)")


@app.command()
@user_errors
def sdmx_check(
    data: list[Path],
    structure: Path = typer.Option(..., "--structure", help="SDMX-ML structure file holding the dataflows."),
) -> None:
    """Check SDMX-CSV files (1.0 or 2.0) against the dataflows of an SDMX-ML structure file."""
    from cubeguard.sdmx.validate import read_structures, validate_csv

    dsds = read_structures(structure)
    for path in data:
        found = validate_csv(path, dsds)
        out.print(f"[green]Conforms[/] {path}: {found.rows:,} rows of {found.dataflow}")


@app.command()
@user_errors
def inspect(store: Path) -> None:
    """List the cubes of a store with their dimensions and sizes."""
    from cubeguard.cubes.store import list_cubes, open_cube

    table = Table(title=str(store))
    for col in ("cube", "breakdowns", "cells", "total"):
        table.add_column(col)
    for cid in list_cubes(store):
        ds = open_cube(store, cid)
        total = int(ds["count"].isel({d: 0 for d in ds["count"].dims}).values)
        table.add_row(cid, " x ".join(map(str, ds["count"].dims)), f"{ds['count'].size:,}", f"{total:,}")
    out.print(table)


@app.command()
def schema(out_file: Path = typer.Option(Path("docs/release-config.schema.json"), "--out")) -> None:
    """Write the JSON Schema of release configs (for editors) and the Markdown config reference."""
    from cubeguard.config.reference import write_reference

    md = write_reference(out_file)
    out.print(f"[green]Wrote[/] {out_file} and {md}")


# The names before issue 36 renamed them (serve, server, too close to tables), hidden, for scripts.
app.command("serve", hidden=True)(deploy)
app.command("server", hidden=True)(prefect_server)

if __name__ == "__main__":  # pragma: no cover
    app()
