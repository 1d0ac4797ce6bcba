"""The report's numbers as Parquet files beside ``report.html``, for analysis outside the page.

Files in the report folder (long form, one row per table cell, columns Parquet can store):

* ``measures.parquet``: one row per cube (column ``cube``), one column per measure key
  (``"rad@interior"``, see :mod:`cubeguard.measures.table`);
* ``sweep.parquet``: the parameter sweep of the R-U map, if there is one;
* ``drilldown.parquet``: the drill-down by breakdown and level, one row per cube, breakdown and
  level (see :mod:`cubeguard.report.drilldown`), if the report has one;
* ``deviations_by_dimension.parquet``, ``deviations_by_size.parquet`` and
  ``deviations_by_size_cumulative.parquet``: Höhne (2011) Tables 3, 4a and 4b of every cube, keyed
  by a ``cube`` column (select one cube's tables with ``frame[frame.cube == id]``);
* ``programme_by_dimension.parquet``, ``programme_by_size.parquet``,
  ``programme_by_size_cumulative.parquet``: the same tables pooled over all cubes.

One file per table rather than per cube keeps a programme of 119 cubes at a handful of files and
needs no file names made from cube ids. Files of an earlier report that this one has no data for
are removed, so the folder never mixes two runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from cubeguard.report.summary import CubeSummary
from cubeguard.report.tables import long_by_dimension, long_cumulative

MEASURES_FILE = "measures.parquet"
SWEEP_FILE = "sweep.parquet"
DRILLDOWN_FILE = "drilldown.parquet"
TABLES = ("by_dimension", "by_size", "by_size_cumulative")
CUBE_FILES = tuple(f"deviations_{t}.parquet" for t in TABLES)
PROGRAMME_FILES = tuple(f"programme_{t}.parquet" for t in TABLES)


def write_measures(folder: Path, measures: pd.DataFrame) -> Path:
    """Write a measures frame (indexed by cube) as Parquet, with the index as column ``cube``."""
    path = folder / MEASURES_FILE
    frame = measures.copy()
    frame.columns = [str(c) for c in frame.columns]
    frame.index = pd.Index([str(i) for i in frame.index], name="cube")
    frame.reset_index().to_parquet(path, index=False)
    return path


def deviation_frames(summary: CubeSummary) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Höhne's Tables 3, 4a and 4b of one summary in long form (in the order of :data:`TABLES`)."""
    return (
        long_by_dimension(summary.by_dimension),
        summary.by_size.cells.reset_index(),
        long_cumulative(summary.by_size),
    )


def _keyed(cube_ids: list[str], frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The frames stacked, with a first column ``cube`` naming each row's cube."""
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "cube", np.repeat(np.asarray(cube_ids, dtype=object), [len(f) for f in frames]))
    return out


def write_all(
    folder: Path,
    measures: pd.DataFrame,
    summaries: Mapping[str, CubeSummary],
    programme: CubeSummary | None,
    sweep: pd.DataFrame | None,
    drilldown: pd.DataFrame | None = None,
) -> list[Path]:
    """Write every Parquet file of a report folder; remove those of an earlier report left without data."""
    written = [write_measures(folder, measures)]
    for name, frame in ((SWEEP_FILE, sweep), (DRILLDOWN_FILE, drilldown)):
        if frame is not None:
            frame.reset_index(drop=True).to_parquet(folder / name, index=False)
            written.append(folder / name)
    if summaries:
        per_cube = [deviation_frames(s) for s in summaries.values()]
        for k, name in enumerate(CUBE_FILES):
            _keyed(list(summaries), [tables[k] for tables in per_cube]).to_parquet(folder / name, index=False)
            written.append(folder / name)
    if programme is not None:
        for name, frame in zip(PROGRAMME_FILES, deviation_frames(programme), strict=True):
            frame.to_parquet(folder / name, index=False)
            written.append(folder / name)
    for name in (SWEEP_FILE, DRILLDOWN_FILE, *CUBE_FILES, *PROGRAMME_FILES):
        if folder / name not in written:
            (folder / name).unlink(missing_ok=True)
    return written
