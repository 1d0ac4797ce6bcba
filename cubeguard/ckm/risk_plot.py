"""A heat map of the cell key method's disclosure risk: P(original = i | published = j).

Enderle, Giessing and Tent (2020), "Calculation of risk probabilities for the cell key method":
the probability that a published value ``j`` came from a small original value ``i``. Like the
p-table itself, the picture reveals the noise design: keep it internal.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cubeguard.ckm.risk import RiskTable


def plot_risk(table: RiskTable, path: str | Path, *, i_show: int = 5, dpi: int = 100) -> Path:
    """Draw P(i | j) for originals ``0..i_show`` against every published value, annotated, to a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    rows = min(i_show, int(table.original.max())) + 1
    data = np.asarray(table.probability[:rows], dtype=float)
    figure = Figure(figsize=(max(6.0, 0.45 * data.shape[1] + 1.5), 0.45 * rows + 1.6), dpi=dpi)
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(data), cmap="Reds", vmin=0.0, vmax=1.0, aspect="auto")
    for (a, b), p in np.ndenumerate(data):
        if np.isfinite(p) and p >= 0.005:
            ax.text(b, a, f"{p:.2f}", ha="center", va="center", fontsize=7, color="white" if p > 0.6 else "black")
    ax.set_xticks(range(data.shape[1]), [str(j) for j in table.published])
    ax.set_yticks(range(rows), [str(i) for i in table.original[:rows]])
    ax.set_xlabel("published value j")
    ax.set_ylabel("original value i")
    ax.set_title("P(original = i | published = j)")
    figure.colorbar(image, ax=ax, fraction=0.03)
    figure.tight_layout()
    figure.savefig(path)
    return path
