"""The report's drill-down by breakdown and level: one collapsible table per cube and a heat-map of all.

The numbers come from :mod:`cubeguard.measures.drilldown` (cells, cells changed, small cells left
unchanged, AAD, the largest deviation and RAD per dimension and hierarchy level). Levels are named
by their depth (0 is the total) and, where the codes say so, by a name: the text every label of
the level puts before its own code (``NUTS 3 region`` for ``NUTS 3 region ZZ111``), otherwise an
example label; and, given the release's breakdowns, the breakdowns of the same variable whose
finest level it is (``GEO.M`` for NUTS 3). Published values' deviations from the originals are
shown elsewhere in the report already; no parameter of a method appears here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import xarray as xr

from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.measures.drilldown import MEASURE_COLUMNS, level_measures, level_sums, pool_levels
from cubeguard.report import definitions, plots
from cubeguard.report._markup import definition_list, esc, image, table

ANCHOR = "drilldown-section"
#: Columns of a drill-down frame before the sums of :func:`~cubeguard.measures.drilldown.level_sums`.
KEYS = ("cube", "breakdown", "level", "name", "codes")
#: Columns of each cube's table on the page, in order.
SHOWN = ("breakdown", "level", "name", "codes", *MEASURE_COLUMNS)
EXAMPLE_CHARS = 32
Finest = Mapping[str, Mapping[int, Sequence[str]]]


def finest_levels(breakdowns: Mapping[str, Breakdown]) -> dict[str, dict[int, list[str]]]:
    """Per breakdown id, per depth: the breakdowns of the same variable whose finest level is that depth.

    E.g. for ``GEO.H`` of a classification with breakdowns ``GEO.N`` (depth 0), ``GEO.L`` (2),
    ``GEO.M`` (3) and ``GEO.H`` (all, 4): ``{0: ["GEO.N"], 2: ["GEO.L"], 3: ["GEO.M"], 4: ["GEO.H"]}``.
    """
    by_variable: dict[str, dict[int, list[str]]] = {}
    for bid, b in sorted(breakdowns.items()):
        if b.depths:
            by_variable.setdefault(b.classification.variable, {}).setdefault(max(b.depths), []).append(bid)
    return {bid: by_variable.get(b.classification.variable, {}) for bid, b in breakdowns.items()}


def _base_name(codes: Sequence[str], labels: Sequence[str], depth: Sequence[int], level: int) -> str:
    """``total``; the text every label of the level puts before its own code; else an example label."""
    if level == 0:
        return "total"
    at = [(str(c), str(lab)) for c, lab, d in zip(codes, labels, depth, strict=True) if d == level]
    heads = {lab[: lab.find(f" {c}")].strip() if lab.find(f" {c}") > 0 else "" for c, lab in at}
    if len(heads) == 1 and "" not in heads:
        return heads.pop()
    example = next((lab for _, lab in at if lab), "")
    if not example:
        return ""
    short = example if len(example) <= EXAMPLE_CHARS else example[: EXAMPLE_CHARS - 1] + "…"
    return f"e.g. {short}"


def level_names(cube: xr.Dataset | xr.DataArray, finest: Finest | None = None) -> dict[tuple[str, int], str]:
    """A name for each (dimension, level) of ``cube``, from its ``<dim>.label`` coordinates and ``finest``."""
    out: dict[tuple[str, int], str] = {}
    for dim in map(str, cube.dims):
        codes = [str(c) for c in cube[dim].values.tolist()]
        depth = [int(d) for d in np.asarray(cube[f"{dim}.depth"].values).tolist()]
        label = f"{dim}.label"
        labels = [str(v) for v in cube[label].values.tolist()] if label in cube.coords else [""] * len(codes)
        ends = (finest or {}).get(dim, {})
        for level in sorted(set(depth)):
            base = _base_name(codes, labels, depth, level)
            of = f"finest of {', '.join(ends[level])}" if ends.get(level) else ""
            out[(dim, level)] = f"{base} ({of})" if base and of else base or of
    return out


def cube_levels(
    original: xr.Dataset | xr.DataArray,
    protected: xr.Dataset | xr.DataArray,
    finest: Finest | None = None,
    small: Sequence[int] = (1, 2),
) -> pd.DataFrame:
    """:func:`~cubeguard.measures.drilldown.level_sums` of one cube pair, with each level's ``name``."""
    sums = level_sums(original, protected, small=small)
    names = level_names(original, finest)
    sums.insert(2, "name", [names[(b, int(v))] for b, v in zip(sums["breakdown"], sums["level"], strict=True)])
    return sums


def drilldown_frame(
    pairs: Mapping[str, tuple[xr.Dataset, xr.Dataset]],
    finest: Finest | None = None,
    *,
    small: Sequence[int] = (1, 2),
    workers: int = 1,
) -> pd.DataFrame:
    """The drill-down sums of every cube of ``pairs`` (opened lazily or loaded), keyed by a ``cube`` column.

    Each cube is read block by block (see :mod:`cubeguard.measures.drilldown`); ``workers``
    threads measure that many cubes at once. ``finest`` names levels by the breakdowns that stop
    there (see :func:`finest_levels`); ``small`` are the original counts that make a cell small.
    """

    def one(item: tuple[str, tuple[xr.Dataset, xr.Dataset]]) -> pd.DataFrame:
        cube_id, (o, p) = item
        return cube_levels(o, p, finest, small).assign(cube=cube_id)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        frames = list(pool.map(one, pairs.items()))
    if not frames:
        return pd.DataFrame(columns=[*KEYS])
    out = pd.concat(frames, ignore_index=True)
    return out[["cube", *[c for c in out.columns if c != "cube"]]]


def problems(frame: pd.DataFrame, cubes: Sequence[str]) -> list[str]:
    """Why ``frame`` cannot be shown for ``cubes`` (empty if it can)."""
    missing = [c for c in KEYS if c not in frame.columns]
    if missing:
        return [f"drilldown: missing column(s) {missing}; pass the frame from drilldown_frame"]
    stray = sorted(set(map(str, frame["cube"])) - set(cubes))
    return [f"drilldown: cube(s) {stray[:5]} are not in cubes"] if stray else []


def measures(frame: pd.DataFrame) -> pd.DataFrame:
    """The drill-down measures of every row of ``frame`` (as written to Parquet)."""
    return level_measures(frame)[["cube", *SHOWN]].reset_index(drop=True)


def _cube_block(cube: str, rows: pd.DataFrame) -> str:
    dims = rows["breakdown"].drop_duplicates().tolist()
    cells = int(rows.loc[rows["breakdown"] == dims[0], "cells"].sum())  # every breakdown's levels cover the cube
    summary = f"Cube {esc(cube)}: {esc(' × '.join(map(str, dims)))}, {cells:,} cells"
    body = table(level_measures(rows)[list(SHOWN)], index=False)
    return f'<details class="drilldown"><summary>{summary}</summary>{body}</details>'


def drilldown_section(frame: pd.DataFrame, cubes: Sequence[str], parquet_file: str) -> str:
    """HTML of the section: the heat-map over all cubes, then one collapsible table per cube of ``cubes``."""
    pooled = level_measures(pool_levels([frame]))
    pooled_cubes = frame["cube"].nunique()
    parts = [
        f'<h2 id="{ANCHOR}">Drill-down by breakdown and level</h2>',
        "<p>Each cube's measures restricted, per breakdown, to the cells whose code on that breakdown lies at one "
        "level of its hierarchy (level 0 is the total), whatever their codes on the other breakdowns: where in "
        "the hierarchies the protection changed counts (Shlomo 2009, section 4; Handbook on SDC v2, 5.8). "
        f"All values are in <code>{esc(parquet_file)}</code>.</p>",
        image(
            plots.plot_drilldown(
                pooled,
                label="RAD, mean |p - o| / o",
                title=f"RAD by breakdown and level, {pooled_cubes} cube(s) pooled",
            ),
            "drill-down heat-map",
            plots.DRILLDOWN_CAPTION,
        ),
    ]
    for cube in cubes:
        rows = frame[frame["cube"].astype(str) == cube]
        if len(rows):
            parts.append(_cube_block(cube, rows))
    return "".join(parts) + definition_list(definitions.drilldown_defined(SHOWN))
