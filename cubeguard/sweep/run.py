"""Run a parameter sweep: one protection step over a grid of parameter sets on the tabulated cubes.

For every parameter set of a :class:`~cubeguard.sweep.grid.Grid`, the set's step is built exactly
as a release builds it (:func:`cubeguard.pipeline.resolved_steps.build_step`) and applied to every chosen
cube of the release's original (tabulated) store, in memory: nothing protected is written. Each
protected cube is measured right away with :func:`~cubeguard.measures.table.measure_cube` and
checked against the release's gates (:mod:`cubeguard.sweep.gates`), so a set's numbers are those a
release with that one step would produce (Handbook on SDC v2, 5.8: the R-U confidentiality map
compares parameter choices by disclosure risk and information loss).

Cubes are read one at a time; for each, the parameter sets run in parallel as Dask tasks (the
threaded scheduler with two workers by default, or the scheduler or distributed ``Client`` given).
Results do not depend on the scheduler: every task is deterministic and rows are put in (set,
cube) order. The step's secret parameters appear only in ``out_folder``, which must lie in the
release's ``internal/`` folder; messages and progress name sets by number and place in the grid.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr
from dask.base import compute
from dask.delayed import delayed
from pydantic import ValidationError

from cubeguard.attack import CubeView, attack_cube
from cubeguard.attack.system import Bounder
from cubeguard.config.load import Release, _unknown
from cubeguard.config.models import GateSpec
from cubeguard.cubes.store import list_cubes, open_cube
from cubeguard.errors import CubeguardError
from cubeguard.gates.attack import MISSED_COLUMN, RECOVERED_COLUMN
from cubeguard.measures.table import MeasureSpec, measure_cube
from cubeguard.methods.base import CubeFunction
from cubeguard.methods.registry import CUBE_METHODS
from cubeguard.pipeline.resolved_steps import build_step, resolved_step
from cubeguard.secrets import EnvSecret, PrefectSecret, SecretResolver, resolve_number
from cubeguard.sweep.gates import CHECKS, evaluate_gates
from cubeguard.sweep.grid import Grid, ParameterSet, column_scope
from cubeguard.sweep.output import write_outputs

Progress = Callable[[str, int], None]
DEFAULT_WORKERS = 2


@dataclass(frozen=True, eq=False)
class SweepResult:
    """The outcome of :func:`run_sweep` (the frames hold the secret parameters: keep them internal).

    Attributes:
        folder: the sweep's folder (under the release's ``internal/``).
        sweep_file: ``sweep.parquet``, one row per parameter set and cube, every measure.
        summary_file: ``summary.parquet``, one row per parameter set.
        ru_map: ``ru_map.png``, the R-U confidentiality map.
        html: ``sweep.html``, the summary table and the map on one self-contained page.
        spec: the measures computed for every set and cube.
        risk: the measures-table column on the map's risk axis.
        utility: the column on its information-loss axis.
        summary: the rows of ``summary.parquet``.
        cells: the rows of ``sweep.parquet``.
    """

    folder: Path
    sweep_file: Path
    summary_file: Path
    ru_map: Path
    html: Path
    spec: MeasureSpec
    risk: str
    utility: str
    summary: pd.DataFrame = field(repr=False)
    cells: pd.DataFrame = field(repr=False)

    @property
    def passing(self) -> list[int]:
        """Numbers of the parameter sets that pass every gate on every chosen cube."""
        return [int(n) for n in self.summary.loc[self.summary["passes"], "set"]]

    def lines(self) -> list[str]:
        """One secret-free line per set (number, place in the grid, verdict) for a terminal or a log."""
        out = []
        for row in self.summary.itertuples(index=False):
            verdict = "passes the gates" if row.passes else f"fails: {row.failing}"
            out.append(f"set {row.set} ({row.where}): {verdict}")
        return out


def sweep_folder(release: Release, now: dt.datetime | None = None) -> Path:
    """A new folder ``<output.folder>/internal/sweep/<UTC timestamp>`` for one sweep (not created)."""
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%dT%H%M%SZ")
    base = release.config.output.internal / "sweep"
    folder, n = base / stamp, 1
    while folder.exists():
        n += 1
        folder = base / f"{stamp}-{n}"
    return folder


def run_sweep(
    release: Release,
    grid: Grid,
    original_store: Path,
    out_folder: Path,
    client_or_scheduler: Any = None,
    progress: Progress | None = None,
    *,
    resolver: SecretResolver | None = None,
    workers: int = DEFAULT_WORKERS,
) -> SweepResult:
    """Protect, measure and gate every chosen cube with every parameter set of ``grid``; write the outputs.

    Args:
        release: the release whose cubes and gates are used (its own ``steps:`` are not).
        grid: the parameter sets (:func:`~cubeguard.sweep.grid.load_grid`).
        original_store: the release's tabulated store (``output.original_store``).
        out_folder: where the outputs go, inside ``output.internal`` (see :func:`sweep_folder`).
        client_or_scheduler: a ``distributed.Client``, a Dask scheduler name (``"threads"``,
            ``"synchronous"``, ``"processes"``) or callable; None: threads. Tasks open
            ``original_store`` themselves, so a cluster's workers must see it at the same path.
        progress: called ``("build", 1)`` per parameter set built and ``("sweep", n)`` as ``n``
            set-cube pairs finish.
        resolver: reads Prefect Secret blocks for secret references (the flow layer's).
        workers: threads or processes for a named local scheduler.

    Returns:
        The summary per set, the rows per set and cube, and the paths written.

    Raises:
        CubeguardError: if ``out_folder`` is outside ``internal/`` or the store lacks a cube.
        SweepGridError: listing every chosen cube that is unknown or does not fit the measures,
            and every parameter set whose step cannot be built (e.g. an infeasible p-table).
    """
    out_folder = _internal(release, Path(out_folder))
    cubes = _chosen_cubes(release, grid)
    steps = build_steps(grid, resolver, progress)  # every set checked before any cube is read
    _check_store(Path(original_store), cubes)
    spec = grid.measure_spec()
    gates = release.config.gates
    options = _scheduler(client_or_scheduler, workers)
    rows: dict[tuple[int, str], dict[str, object]] = {}
    attacked = gates.max_recovered_by_attack is not None or RECOVERED_COLUMN in (grid.spec.risk, grid.spec.utility)
    bounds = set_bounds(grid, resolver) if attacked else [None] * len(steps)
    for cube_id in cubes:
        original = delayed(_load, pure=True)(Path(original_store), cube_id)
        tasks = [
            delayed(_one, pure=False)(original, step, spec, gates, b if attacked else False)
            for step, b in zip(steps, bounds, strict=True)
        ]
        computed = compute(*tasks, **options)  # type: ignore[no-untyped-call]
        for s, row in zip(grid.sets, computed, strict=True):
            rows[(s.number, cube_id)] = row
        if progress:
            progress("sweep", len(steps))
    cells = _cells(grid, cubes, rows, resolver)
    summary = _summary(grid, cells)
    title = f"Parameter sweep: {release.config.name} ({grid.spec.method})"
    paths = write_outputs(out_folder, cells, summary, grid.spec.risk, grid.spec.utility, len(cubes), title)
    return SweepResult(
        out_folder, *paths, spec=spec, risk=grid.spec.risk, utility=grid.spec.utility, summary=summary, cells=cells
    )


def build_steps(
    grid: Grid, resolver: SecretResolver | None = None, progress: Progress | None = None
) -> list[CubeFunction]:
    """Every set's cube function (p-tables built, secrets resolved); one error lists every set that fails."""
    steps, problems = [], []
    for s in grid.sets:
        label = f"set {s.number} ({s.where})"
        try:
            steps.append(build_step(s.step, f"set {s.number}", resolver))  # type: ignore[arg-type]
        except CubeguardError as exc:
            problems.append((s.home, f"{label}: {exc}"))
        except ValidationError as exc:  # the step's own parameter model, e.g. PTableParams
            said = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'parameters'}: {str(e['msg']).removeprefix('Value error, ')}"
                for e in exc.errors()
            )
            problems.append((s.home, f"{label}: {said}"))
        if progress:
            progress("build", 1)
    if problems:
        raise grid.error(problems)
    return steps


def _internal(release: Release, folder: Path) -> Path:
    internal = release.config.output.internal.resolve()
    folder = folder.resolve()
    if not folder.is_relative_to(internal):
        raise CubeguardError(
            f"the sweep folder {folder} is outside {internal}; its files hold the secret parameters, "
            "so write them inside the internal folder (see cubeguard.sweep.sweep_folder)"
        )
    return folder


def _chosen_cubes(release: Release, grid: Grid) -> list[str]:
    """The cubes to sweep, checked against the release and the measures' scopes."""
    known = [c.id for c in release.config.hypercubes]
    chosen = grid.spec.cubes or known
    problems: list[tuple[tuple[str | int, ...], str]] = []
    for k, cube_id in enumerate(grid.spec.cubes or []):
        if cube_id not in known:
            problems.append((("cubes", k), _unknown("hypercube", cube_id, known)))
    for key in ("risk", "utility"):
        column = getattr(grid.spec, key)
        for cube_id in (c for c in chosen if c in known):
            problem = _scope_problem(column, cube_id, release.cube(cube_id).breakdowns)
            if problem:
                problems.append(((key,), problem))
    if problems:
        raise grid.error(problems)
    return list(chosen)


def _scope_problem(column: str, cube_id: str, dims: list[str]) -> str | None:
    """Why ``column`` cannot be measured on a cube with ``dims`` (None if it can)."""
    scope = column_scope(column)
    if isinstance(scope, tuple) and not set(scope) <= set(dims):
        missing = sorted(set(scope) - set(dims))
        return f"{column} needs dimension(s) {missing}, which cube {cube_id} lacks; choose a scope every cube has"
    if column.startswith("cramers_v") and scope == "interior" and len(dims) != 2:
        return f"{column} needs a two-way cube, but {cube_id} has {len(dims)} dimension(s); use a margin @DIM1*DIM2"
    return None


def _check_store(store: Path, chosen: list[str]) -> None:
    if not store.exists():
        raise CubeguardError(
            f"the original store {store} does not exist; run the release first (the sweep reuses its tabulated cubes)"
        )
    stored = set(list_cubes(store))
    missing = [c for c in chosen if c not in stored]
    if missing:
        raise CubeguardError(
            f"the original store {store} lacks cube(s) {missing[:5]}; run the release again to tabulate them"
        )


def _scheduler(client_or_scheduler: Any, workers: int) -> dict[str, Any]:
    if client_or_scheduler is None:
        return {"scheduler": "threads", "num_workers": workers}
    if isinstance(client_or_scheduler, str) and client_or_scheduler in ("threads", "processes"):
        return {"scheduler": client_or_scheduler, "num_workers": workers}
    return {"scheduler": client_or_scheduler}


def _load(store: Path, cube_id: str) -> xr.Dataset:
    return open_cube(store, cube_id).load()


def set_bounds(grid: Grid, resolver: SecretResolver | None = None) -> list[Bounder | None]:
    """Every set's published bounds (:attr:`~cubeguard.methods.base.CubeMethod.bounds`), for the attack."""
    out: list[Bounder | None] = []
    for s in grid.sets:
        maker = CUBE_METHODS[grid.spec.method].bounds
        out.append(None if maker is None else maker(resolved_step(s.step, f"set {s.number}", resolver)))  # type: ignore[type-var]
    return out


def _one(
    original: xr.Dataset, step: CubeFunction, spec: MeasureSpec, gates: GateSpec, bounds: Bounder | bool | None
) -> dict[str, object]:
    """Protect one cube with one set's step (as the release's protection does), measure, attack and gate it.

    ``bounds`` False: no attack; else the set's bounds (None: the method bounds nothing).
    """
    protected = step(original)
    if "noise" not in protected:
        protected = protected.assign(noise=protected["count"] * 0)
    measures = measure_cube(original, protected, spec)
    if bounds is not False:
        report = attack_cube(CubeView.of(protected, original), None if bounds is True else bounds)
        cube = str(original.attrs.get("cube_id", ""))
        measures = {
            **measures,
            RECOVERED_COLUMN: float(report.recovered(cube)),
            MISSED_COLUMN: float(report.missed(cube)),
        }
    return {**measures, **evaluate_gates(original, protected, measures, gates).row()}


def _params(s: ParameterSet, reader: SecretResolver | None) -> dict[str, object]:
    """The set's parameters as values (secret references resolved: the sweep's files are internal)."""
    out: dict[str, object] = {}
    for key in s.params:
        value = getattr(s.step, key)
        if isinstance(value, (EnvSecret, PrefectSecret)):
            value = resolve_number(value, f"set {s.number}.{key}", reader)
        out[key] = str(value) if isinstance(value, Path) else value
    return out


def _cells(
    grid: Grid, cubes: list[str], rows: Mapping[tuple[int, str], dict[str, object]], reader: SecretResolver | None
) -> pd.DataFrame:
    records = []
    for s in grid.sets:
        params = _params(s, reader)
        for cube_id in cubes:
            records.append(
                {
                    "set": s.number,
                    "name": s.name,
                    "where": s.where,
                    **params,
                    "cube": cube_id,
                    **rows[(s.number, cube_id)],
                }
            )
    return pd.DataFrame.from_records(records)


def _summary(grid: Grid, cells: pd.DataFrame) -> pd.DataFrame:
    risk, utility = grid.spec.risk, grid.spec.utility
    out = []
    for s in grid.sets:
        part = cells[cells["set"] == s.number]
        failing = []
        for check in CHECKS:
            bad = [str(c) for c, f in zip(part["cube"], part["failing"], strict=True) if check in str(f).split(", ")]
            if bad:
                failing.append(f"{check} ({', '.join(bad)})")
        first = part.iloc[0]
        params = {k: first[k] for k in s.params}
        out.append(
            {
                "set": s.number,
                "name": s.name,
                "where": s.where,
                **params,
                "cubes": len(part),
                "risk": float(part[risk].mean()),
                "risk_max": float(part[risk].max()),
                "utility": float(part[utility].mean()),
                "utility_max": float(part[utility].max()),
                "passes": not failing,
                "failing": "; ".join(failing),
            }
        )
    return pd.DataFrame.from_records(out)
