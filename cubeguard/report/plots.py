"""The report's figures, each returned as PNG bytes.

* :func:`plot_noise`: the distribution of the noise, over all cells and over small original counts
  (Wilak et al. 2024, the Polish census slides, "Distribution of absolute noise values");
* :func:`plot_deviation_by_size`: absolute deviation by Höhne's (2011) original cell-size classes
  (Table 4b as box plots);
* :func:`plot_original_vs_protected`: published against original counts on log axes, with the
  identity line (a hexbin of cell counts for big cubes);
* :func:`plot_ru_map`: an R-U confidentiality map (Handbook on SDC v2, 5.8: disclosure risk
  against information loss, one labelled point per parameter set);
* :func:`plot_drilldown`: a heat-map of a measure (RAD) per breakdown and hierarchy level.

Figures are drawn on matplotlib's Agg canvas directly, without ``pyplot`` and its global state, so
they can be drawn from threads and leave no open figures behind. The noise figure reveals the
p-table's D and V: the report that carries it is internal.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

import matplotlib
import numpy as np
import numpy.typing as npt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, MaxNLocator

from cubeguard.measures.deviations import SizeTables
from cubeguard.report.errors import ReportError

DPI = 96
SCATTER_LIMIT = 5_000  # cells; bigger cubes get a hexbin of cell counts
RU_COLUMNS = ("name", "risk", "utility", "passes")


def _figure(width: float, height: float, dpi: int, margins: tuple[float, float, float, float]) -> Figure:
    """A figure on its own Agg canvas with fixed margins (left, right, bottom, top as figure fractions).

    Fixed margins instead of constrained layout: the layout engine doubled the drawing time.
    """
    figure = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(figure)
    left, right, bottom, top = margins
    figure.subplots_adjust(left=left, right=right, bottom=bottom, top=top, wspace=0.12)
    return figure


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=figure.dpi, metadata={"Software": None})
    return buffer.getvalue()


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def _noise_panel(ax: Axes, counts: pd.Series, title: str) -> None:
    n = int(counts.sum())
    if n == 0:
        _empty(ax, "no cells")
        ax.set_title(title, fontsize=9)
        return
    values = counts.index.to_numpy(np.float64)
    share = counts.to_numpy(np.float64) / n
    mean = float((values * share).sum())
    sd = math.sqrt(max(float((values**2 * share).sum()) - mean**2, 0.0))
    ax.bar(values, share * 100.0, width=0.8, color="tab:blue")
    ax.set_title(f"{title}\n{n:,} cells, mean {mean:+.3f}, sd {sd:.3f}", fontsize=9)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("noise (published - original)")
    ax.grid(axis="y", linewidth=0.3)


def plot_noise(
    noise: pd.Series, noise_small: pd.Series, *, small_values: Sequence[int] = (1, 2), title: str = "", dpi: int = DPI
) -> bytes:
    """Bar charts of the share of cells per noise value: all cells with an original count >= 1, small cells.

    Args:
        noise: cells per noise value (index) over the cells with an original count of at least 1.
        noise_small: the same over the cells whose original count is one of ``small_values``.
        small_values: the original counts of the second panel, named in its title.
        title: the figure's title.
        dpi: resolution.
    """
    figure = _figure(8.0, 3.4, dpi, (0.07, 0.98, 0.14, 0.76 if title else 0.84))
    left, right = figure.subplots(1, 2)  # not sharex: an empty panel's cleared ticks would clear both
    _noise_panel(left, noise, "original count >= 1")
    _noise_panel(right, noise_small, "original count in {" + ", ".join(str(v) for v in small_values) + "}")
    values = [float(v) for v in (*noise.index, *noise_small.index)]
    if values:
        for ax in (left, right):
            if ax.has_data():
                ax.set_xlim(min(values) - 0.6, max(values) + 0.6)
    left.set_ylabel("cells (%)")
    if title:
        figure.suptitle(title, fontsize=10)
    return _png(figure)


def _quantile(cum_share: npt.NDArray[np.float64], q: float) -> int:
    """The smallest deviation whose cumulative share reaches ``q`` (exact for integer deviations)."""
    return int(np.argmax(cum_share >= q - 1e-12))


def plot_deviation_by_size(tables: SizeTables, *, title: str = "", dpi: int = DPI) -> bytes:
    """Box plots of the absolute deviation per original cell-size class (Höhne 2011, Tables 4a/4b).

    Boxes span the quartiles with the median as a line and the mean as a diamond; whiskers reach the
    5th and 95th percentiles and a circle marks the largest deviation (Table 4a's maximum). Cells
    with an original count of 0 are not in any class (as in Höhne's tables).
    """
    figure = _figure(8.0, 3.4, dpi, (0.07, 0.98, 0.2, 0.9))
    ax = figure.subplots()
    stats = []
    tallest = 0
    for label, row in tables.cumulative.iterrows():
        share = row.to_numpy(np.float64) / 100.0
        exact = np.diff(share, prepend=0.0)
        n = int(tables.cells.loc[label, "cells"])
        largest = int(tables.cells.loc[label, "max_deviation"])
        tallest = max(tallest, largest)
        stats.append(
            {
                "label": f"{label}\n{n:,}",
                "med": _quantile(share, 0.5),
                "q1": _quantile(share, 0.25),
                "q3": _quantile(share, 0.75),
                "whislo": _quantile(share, 0.05),
                "whishi": _quantile(share, 0.95),
                "mean": float((np.arange(share.size) * exact).sum()),
                "fliers": [largest],
            }
        )
    if stats:
        ax.bxp(
            stats,
            showmeans=True,
            patch_artist=True,
            boxprops={"facecolor": "#c6dbef"},
            meanprops={"marker": "D", "markerfacecolor": "tab:red", "markeredgecolor": "tab:red", "markersize": 5},
            flierprops={"marker": "o", "markerfacecolor": "none", "markeredgecolor": "0.2"},
        )
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(-0.25, tallest + 0.5)
        ax.tick_params(axis="x", labelsize=8)
        ax.set_xlabel("original cell size (class, cells)")
        ax.set_ylabel("|published - original|")
        ax.grid(axis="y", linewidth=0.3)
    else:
        _empty(ax, "no cell with an original count >= 1")
    if title:
        ax.set_title(title, fontsize=10)
    return _png(figure)


def _log1p(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    return np.log10(1.0 + np.clip(np.asarray(values, dtype=np.float64), 0.0, None))


def _count_label(v: int) -> str:
    for size, suffix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if v >= size:
            return f"{v // size}{suffix}"
    return str(v)


def _count_axes(ax: Axes, top: float) -> None:
    """Ticks at 0, 1, 10, 100, ... on axes that show ``log10(1 + count)``."""
    ticks = [0, *(10**k for k in range(int(math.log10(max(top, 1.0))) + 1))]
    positions = _log1p(ticks).tolist()
    labels = [_count_label(t) for t in ticks]
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(FixedLocator(positions))
        axis.set_ticklabels(labels)


def plot_original_vs_protected(
    pairs: pd.DataFrame, *, title: str = "", scatter_limit: int = SCATTER_LIMIT, dpi: int = DPI
) -> bytes:
    """Published against original count per cell, both on a log scale (of ``1 + count``, to keep zeros).

    Args:
        pairs: cells per distinct pair of counts; columns ``original``, ``protected``, ``cells``.
        title: the figure's title.
        scatter_limit: up to this many cells, one point per distinct pair; above, a hexbin whose
            colour is the number of cells (log scale).
        dpi: resolution.
    """
    figure = _figure(5.2, 4.6, dpi, (0.14, 0.95, 0.11, 0.88))
    ax = figure.subplots()
    n = int(pairs["cells"].sum()) if len(pairs) else 0
    if n == 0:
        _empty(ax, "no cells")
        return _png(figure)
    x, y = _log1p(pairs["original"]), _log1p(pairs["protected"])
    top = float(max(pairs["original"].max(), pairs["protected"].max(), 1))
    reach = float(_log1p(top)[()]) * 1.03 + 0.05
    if n <= scatter_limit:
        ax.scatter(x, y, s=16, alpha=0.6, color="tab:blue", linewidths=0)
    else:
        hexes = ax.hexbin(
            x,
            y,
            C=pairs["cells"].to_numpy(np.float64),
            reduce_C_function=np.sum,
            gridsize=60,
            bins="log",
            cmap="viridis",
            extent=(-0.05, reach, -0.05, reach),
        )
        figure.colorbar(hexes, ax=ax, label="cells")
    ax.plot([0.0, reach], [0.0, reach], linestyle="--", color="0.3", linewidth=0.8, label="published = original")
    ax.set_xlim(-0.05, reach)
    ax.set_ylim(-0.05, reach)
    ax.set_aspect("equal")
    _count_axes(ax, top)
    ax.set_xlabel("original count")
    ax.set_ylabel("published count")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(f"{title}\n{n:,} cells" if title else f"{n:,} cells", fontsize=10)
    return _png(figure)


def ru_problems(points: pd.DataFrame) -> list[str]:
    """Every reason why ``points`` cannot be drawn as an R-U map (empty if it can)."""
    missing = [c for c in RU_COLUMNS if c not in points.columns]
    problems = (
        [f"missing column(s) {missing}; give one row per parameter set with {list(RU_COLUMNS)}"] if missing else []
    )
    for column in ("risk", "utility"):
        if column in points.columns and not pd.api.types.is_numeric_dtype(points[column]):
            problems.append(f"column {column!r} must be numeric, got {points[column].dtype}")
    return problems


def _gate_state(value: object) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "not gated"
    return "passes" if bool(value) else "fails"


def _label_stack(points: pd.DataFrame, near: float = 0.04) -> list[int]:
    """For each point, how many earlier points lie within ``near`` of it (as fractions of the axes' ranges).

    Labels of points at (nearly) the same place are stacked upwards by this count instead of
    being drawn over each other (several parameter sets often share a risk).
    """
    xy = points[["risk", "utility"]].to_numpy(np.float64)
    span = np.ptp(xy, axis=0) if len(xy) else np.ones(2)
    scaled = xy / np.where(span > 0, span, 1.0)
    return [int((np.abs(scaled[:k] - scaled[k]).max(axis=1) < near).sum()) if k else 0 for k in range(len(xy))]


def plot_ru_map(
    points: pd.DataFrame,
    *,
    risk_label: str = "disclosure risk",
    utility_label: str = "information loss",
    title: str = "R-U confidentiality map",
    dpi: int = DPI,
) -> bytes:
    """Disclosure risk (x) against the ``utility`` column (y), one labelled point per parameter set.

    Args:
        points: columns ``name``, ``risk``, ``utility`` and ``passes`` (True: passes the gates, False:
            fails them, missing: not gated), one row per parameter set.
        risk_label: the x axis label, naming the risk measure.
        utility_label: the y axis label, naming what the ``utility`` column holds.
        title: the figure's title.
        dpi: resolution.

    Raises:
        ReportError: listing every missing or non-numeric column.
    """
    problems = ru_problems(points)
    if problems:
        raise ReportError("the R-U map cannot be drawn: " + "; ".join(problems))
    figure = _figure(6.0, 4.4, dpi, (0.12, 0.97, 0.12, 0.86))
    ax = figure.subplots()
    finite = np.isfinite(points["risk"].to_numpy(np.float64)) & np.isfinite(points["utility"].to_numpy(np.float64))
    shown = points[finite]
    state = shown["passes"].map(_gate_state)
    groups = (
        ("passes", "passes the gates", "tab:green", "o"),
        ("fails", "fails the gates", "tab:red", "X"),
        ("not gated", "not gated", "0.5", "s"),
    )
    for key, label, colour, marker in groups:
        part = shown[(state == key).to_numpy(bool)]
        if len(part):
            ax.scatter(part["risk"], part["utility"], color=colour, marker=marker, s=40, label=label, zorder=3)
    for (_, row), stack in zip(shown.iterrows(), _label_stack(shown), strict=True):
        ax.annotate(
            str(row["name"]),
            (row["risk"], row["utility"]),
            xytext=(4, 4 + 10 * stack),
            textcoords="offset points",
            fontsize=8,
        )
    if len(shown):
        ax.legend(fontsize=8, loc="best")
    else:
        _empty(ax, "no parameter set with a finite risk and utility")
    hidden = int((~finite).sum())
    note = f"\n({hidden} set(s) without a finite risk or utility not shown)" if hidden else ""
    ax.margins(x=0.2, y=0.15)
    ax.set_xlabel(risk_label)
    ax.set_ylabel(utility_label)
    ax.grid(linewidth=0.3)
    ax.set_title(title + note, fontsize=10)
    return _png(figure)


DRILLDOWN_CAPTION = (
    "Mean relative absolute deviation |published - original| / original over the cells with an original count "
    "above 0 (RAD, Shlomo 2009, 4.2), per breakdown (row) and level of its hierarchy (column, 0 = total), all "
    "cubes pooled; blank where a breakdown has no such level. The tables below give each cube's values."
)


def plot_drilldown(
    levels: pd.DataFrame, *, value: str = "rad", label: str = "", title: str = "", dpi: int = DPI
) -> bytes:
    """A heat-map of ``value`` per breakdown (rows, sorted) and level (columns), each cell annotated.

    Args:
        levels: columns ``breakdown``, ``level`` and ``value``, one row per breakdown and level (as
            :func:`cubeguard.measures.drilldown.level_measures` of the pooled sums gives them).
        value: the column to show (default: RAD).
        label: the colour bar's label (default: ``value``).
        title: the figure's title (default: names ``value``).
        dpi: resolution.
    """
    rows = sorted(levels["breakdown"].astype(str).unique())
    depth = int(levels["level"].max()) + 1 if len(levels) else 1
    grid = np.full((len(rows), depth), np.nan)
    where = {b: k for k, b in enumerate(rows)}
    for b, d, v in zip(levels["breakdown"].astype(str), levels["level"], levels[value], strict=True):
        grid[where[b], int(d)] = float(v)
    cells_w, cells_h = 0.6 * depth, 0.22 * max(len(rows), 1)  # inches; around: labels, colour bar, titles
    width, height = max(1.0 + cells_w + 1.2, 4.4), 0.95 + cells_h  # wide enough for the title
    figure = Figure(figsize=(width, height), dpi=dpi)
    FigureCanvasAgg(figure)
    ax = figure.add_axes((1.0 / width, 0.55 / height, cells_w / width, cells_h / height))
    bar = figure.add_axes(((1.15 + cells_w) / width, 0.55 / height, 0.12 / width, cells_h / height))
    finite = grid[np.isfinite(grid)]
    if not finite.size:
        bar.set_visible(False)
        _empty(ax, "no cell with an original count above 0")
        return _png(figure)
    top = max(float(finite.max()), 1e-9)
    cmap = matplotlib.colormaps["YlOrRd"].with_extremes(bad="#eaeef2")
    heat = ax.imshow(np.ma.masked_invalid(grid), aspect="auto", cmap=cmap, vmin=0.0, vmax=top)
    for (r, c), v in np.ndenumerate(grid):
        if np.isfinite(v):
            ax.text(c, r, f"{v:.2g}", ha="center", va="center", fontsize=7, color="white" if v > 0.6 * top else "black")
    ax.set_xticks(range(depth), [str(d) for d in range(depth)], fontsize=8)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_xlabel("level (0 = total)", fontsize=8)
    figure.colorbar(heat, cax=bar).set_label(label or value, fontsize=8)
    bar.tick_params(labelsize=7)
    figure.suptitle(
        title or f"{value} by breakdown and level", x=0.03, y=1.0 - 0.08 / height, ha="left", va="top", fontsize=9
    )
    return _png(figure)
