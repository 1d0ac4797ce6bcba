"""Build a release's report: read its original and protected stores, measure, summarise, write.

Cubes are loaded into memory in batches of at most ``batch_cells`` cells, each batch measured with
:func:`cubeguard.measures.table.measure_cubes` and reduced to :class:`CubeSummary` histograms, so a
programme of many large cubes never sits in memory at once; each batch is also drilled down by
breakdown and level (:mod:`cubeguard.report.drilldown`) unless the caller gives the drill-down.
Every cube is measured; cubes that cannot be are reported together at the end.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pandas as pd
import xarray as xr

from cubeguard.cubes.store import list_cubes, load_cube, open_cube
from cubeguard.errors import CubeguardError
from cubeguard.measures.table import MeasureSpec, measure_cubes
from cubeguard.report.drilldown import drilldown_frame
from cubeguard.report.errors import ReportError
from cubeguard.report.html import write_report
from cubeguard.report.summary import CubeSummary, summarise

REPORT_DIR = "report"
BATCH_CELLS = 20_000_000


def _stores(release_folder: Path) -> tuple[Path, Path, list[str]]:
    original, protected = release_folder / "original.zarr", release_folder / "protected.zarr"
    missing = [str(p) for p in (original, protected) if not p.exists()]
    if missing:
        raise ReportError(
            f"{release_folder} lacks {' and '.join(missing)}; run the release (tabulate and protect) first"
        )
    ids, protected_ids = list_cubes(original), list_cubes(protected)
    if ids != protected_ids:
        only_o = sorted(set(ids) - set(protected_ids))
        only_p = sorted(set(protected_ids) - set(ids))
        raise ReportError(
            f"the stores hold different cubes (only original: {only_o[:5]}, only protected: {only_p[:5]}); "
            "run the protection step again"
        )
    return original, protected, ids


def _batches(original: Path, ids: list[str], batch_cells: int) -> Iterator[list[str]]:
    batch: list[str] = []
    cells = 0
    for cube_id in ids:
        size = int(open_cube(original, cube_id, dask=False)["count"].size)
        if batch and cells + size > batch_cells:
            yield batch
            batch, cells = [], 0
        batch.append(cube_id)
        cells += size
    if batch:
        yield batch


def _load(
    original: Path, protected: Path, cube_id: str, given: Mapping[str, tuple[xr.Dataset, xr.Dataset]] | None = None
) -> tuple[xr.Dataset, xr.Dataset]:
    if given is not None:  # the caller's pairs (a release's cubes as delivered, before any swap)
        o, p = given[cube_id]
        return o[["count"]].load(), p[[v for v in ("count", "noise") if v in p.data_vars]].load()
    p = load_cube(protected, cube_id)
    return load_cube(original, cube_id, ["count"]), p[[v for v in ("count", "noise") if v in p.data_vars]]


def build_report(
    release_folder: Path,
    spec: MeasureSpec | None = None,
    gates: list[dict[str, object]] | None = None,
    *,
    title: str | None = None,
    sweep: pd.DataFrame | None = None,
    workers: int = 1,
    batch_cells: int = BATCH_CELLS,
    measures: pd.DataFrame | None = None,
    facts: Mapping[str, str] | None = None,
    methods: Sequence[tuple[str, str, str]] = (),
    levels: pd.DataFrame | None = None,
    pairs: Mapping[str, tuple[xr.Dataset, xr.Dataset]] | None = None,
) -> Path:
    """Measure every cube of ``release_folder`` and write its report to ``release_folder / "report"``.

    Args:
        release_folder: the folder holding ``original.zarr`` and ``protected.zarr``.
        spec: the measures to compute (default: :class:`MeasureSpec` defaults).
        gates: gate results to show, one dict per gate; None if the release has not been gated.
        title: the page title (default: named after the folder).
        sweep: parameter sets for the R-U map (see :func:`write_report`).
        workers: threads for :func:`measure_cubes`.
        batch_cells: at most this many cells are loaded at once (a bigger cube is loaded alone).
        measures: measures already computed for these cubes (e.g. by the release's measure step);
            given, they are shown as they are and not computed again.
        facts: what identifies the release, shown under the title (see :func:`write_report`).
        methods: sections on the release's methods (see :func:`write_report`).
        levels: the drill-down by breakdown and level, as :func:`drilldown_frame` returns it (e.g.
            with the level names of the release's breakdowns); default: computed from the stores.
        pairs: (original, protected) of every cube, lazily opened, to read instead of the stores
            (a release's :func:`~cubeguard.pipeline.measure.cube_pairs`: for a release with
            pre-tabular steps, the cubes as delivered); default: ``original.zarr`` and ``protected.zarr``.

    Returns:
        The path of ``report.html``.

    Raises:
        ReportError: if a store is missing, the stores hold different cubes, or cubes cannot be
            measured (all of them listed).
    """
    release_folder = Path(release_folder)
    spec = spec or MeasureSpec()
    original, protected, ids = _stores(release_folder)
    frames: list[pd.DataFrame] = []
    summaries: dict[str, CubeSummary] = {}
    failures: list[str] = []
    drills: list[pd.DataFrame] = []
    for batch in _batches(original, ids, batch_cells):
        loaded = {cube_id: _load(original, protected, cube_id, pairs) for cube_id in batch}
        if measures is None:
            try:
                frames.append(measure_cubes(loaded, spec, workers=workers))
            except CubeguardError as err:
                failures.append(str(err))
                continue
        for cube_id, (o, p) in loaded.items():
            summaries[cube_id] = summarise(o, p, small_values=spec.small_values)
        if levels is None:
            drills.append(drilldown_frame(loaded, small=spec.small_values))
    if failures:
        raise ReportError("the report cannot be built: " + " | ".join(failures))
    if measures is None:
        measures = pd.concat(frames, sort=False) if frames else pd.DataFrame(index=pd.Index([], name="cube"))
    return write_report(
        release_folder / REPORT_DIR,
        ids,
        measures,
        gates,
        title or f"Protection report: {release_folder.name}",
        sweep,
        summaries=summaries,
        facts=facts,
        methods=methods,
        levels=levels if levels is not None else pd.concat(drills, ignore_index=True) if drills else None,
    )
