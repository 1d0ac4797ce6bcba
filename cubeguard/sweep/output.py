"""A sweep's files: the tables as Parquet, the R-U confidentiality map and one self-contained page.

Written into the sweep's folder (inside the release's ``internal/``: every file names the
parameters, which are secret):

* ``sweep.parquet``: one row per parameter set and cube, with the set's parameters, every measure
  (``<measure>@<scope>``, see :mod:`cubeguard.measures.table`) and the gate columns;
* ``summary.parquet``: one row per set: the risk and utility measures' mean (``risk``,
  ``utility``) and maximum over the cubes, and whether the set passes the gates (``failing`` names
  the failing checks and cubes); the columns ``name``, ``risk``, ``utility``, ``passes`` are those
  :func:`cubeguard.report.html.write_report` takes as its ``sweep``;
* ``ru_map.png``: :func:`cubeguard.report.plots.plot_ru_map` of the summary (Handbook on SDC v2, 5.8);
* ``sweep.html``: the map (inline) and both tables, offline-readable.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from cubeguard.report._markup import esc, image, page, table
from cubeguard.report.plots import plot_ru_map

SWEEP_FILE = "sweep.parquet"
SUMMARY_FILE = "summary.parquet"
RU_MAP_FILE = "ru_map.png"
HTML_FILE = "sweep.html"


def write_outputs(
    folder: Path, cells: pd.DataFrame, summary: pd.DataFrame, risk: str, utility: str, n_cubes: int, title: str = ""
) -> tuple[Path, Path, Path, Path]:
    """Write the four files into ``folder`` (created); return their paths in the order above."""
    folder.mkdir(parents=True, exist_ok=True)
    cells.to_parquet(folder / SWEEP_FILE, index=False)
    summary.to_parquet(folder / SUMMARY_FILE, index=False)
    png = plot_ru_map(
        summary[["name", "risk", "utility", "passes"]],
        risk_label=f"{risk} (mean over {n_cubes} cube(s))",
        utility_label=f"{utility} (mean over {n_cubes} cube(s))",
    )
    (folder / RU_MAP_FILE).write_bytes(png)
    html = folder / HTML_FILE
    html.write_text(_page(title or "Parameter sweep", cells, summary, risk, utility, n_cubes, png), encoding="utf-8")
    return folder / SWEEP_FILE, folder / SUMMARY_FILE, folder / RU_MAP_FILE, html


def _page(
    title: str, cells: pd.DataFrame, summary: pd.DataFrame, risk: str, utility: str, n_cubes: int, png: bytes
) -> str:
    passing = summary.loc[summary["passes"], "name"].tolist()
    verdict = (
        f"{len(passing)} of {len(summary)} parameter set(s) pass the release's gates on every cube: "
        + ", ".join(esc(n) for n in passing)
        if passing
        else f"None of the {len(summary)} parameter set(s) passes the release's gates on every cube."
    )
    caption = (
        f"R-U confidentiality map (Handbook on SDC v2, 5.8): {risk} (disclosure risk) against {utility} "
        f"(information loss), each the mean over {n_cubes} cube(s); one point per parameter set, green passes "
        "the gates, red fails them."
    )
    per_cube = cells[["set", "name", "cube", risk, utility, "passes", "failing"]]
    body = (
        f"<header><h1>{esc(title)}</h1>"
        '<p class="banner"><strong>Internal.</strong> This page shows the perturbation parameters of every set; '
        "do not publish it.</p></header>"
        f"<p>{verdict}</p>"
        + image(png, "R-U confidentiality map", caption)
        + '<h2 id="sets">Parameter sets</h2>'
        + table(summary, caption=f"risk and utility: mean and maximum over {n_cubes} cube(s)", index=False)
        + '<h2 id="cubes">Per set and cube</h2>'
        + table(per_cube, caption="every measure is in sweep.parquet", index=False)
        + "<footer><p>Files beside this page:</p><ul>"
        + "".join(f"<li><code>{esc(f)}</code></li>" for f in (SWEEP_FILE, SUMMARY_FILE, RU_MAP_FILE))
        + "</ul></footer>"
    )
    return page(title, body)
