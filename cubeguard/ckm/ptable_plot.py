"""A picture of a count p-table: one bar chart of the noise distribution per original count.

The counterpart of ptable's ``plot(ptable, type = "d")`` (``R/pt_plot.R``). The figure shows the
distributions and hence reveals D and V: treat the file like the p-table itself, not as a
publishable output.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from cubeguard.ckm.ptable import PTable

_PANEL_INCHES = (2.4, 1.9)  # width, height of one panel


def plot_ptable(ptable: PTable, path: str | Path, *, columns: int = 4, dpi: int = 100) -> Path:
    """Draw one small panel per original count ``i`` (noise ``v`` against ``p``) to a PNG.

    Every panel has the same axes, so that the distributions can be compared; the last panel is
    titled ``i >= max i`` because its distribution serves every larger count. Modified tables
    (several rows with one noise) show the summed probability per noise. Uses matplotlib's Agg
    canvas directly, without ``pyplot`` and its global state.

    Returns:
        The path of the PNG, ``columns * 2.4`` by ``rows * 1.9`` inches at ``dpi``.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    path = Path(path)
    counts = range(ptable.max_i + 1)
    columns = max(1, min(columns, len(counts)))
    rows = math.ceil(len(counts) / columns)
    figure = Figure(figsize=(columns * _PANEL_INCHES[0], rows * _PANEL_INCHES[1]), dpi=dpi)
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, sharex=True, sharey=True, squeeze=False)
    reach = max(ptable.max_noise, 1)
    for count, ax in zip(counts, axes.flat, strict=False):
        block = ptable.block(count)
        noise, where = np.unique(ptable.v[block], return_inverse=True)
        ax.bar(noise, np.bincount(where, weights=ptable.p[block]), width=0.8, color="tab:blue")
        last = count == ptable.max_i and count > 0
        ax.set_title(f"i >= {count}" if last else f"i = {count}", fontsize=9)
        ax.set_xlim(-reach - 0.6, reach + 0.6)
        ax.set_ylim(0.0, 1.0)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.tick_params(labelsize=7)
        ax.grid(axis="y", linewidth=0.3)
    for ax in axes.flat[len(counts) :]:
        ax.set_visible(False)
    for column in range(columns):  # the lowest panel of each column gets the noise axis
        lowest = axes[(len(counts) - 1 - column) // columns, column]
        lowest.set_xlabel("noise v", fontsize=8)
        lowest.tick_params(labelbottom=True)
    for ax in axes[:, 0]:
        ax.set_ylabel("probability p", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=dpi)
    return path
