"""``report.html``: gate results, measures, deviation tables and plots of a release on one offline page.

The page is self-contained (inline CSS and script, images as ``data:`` URIs, no fonts or scripts
from the network), every text is escaped, and script errors land in the hidden ``#js-errors``
element so that a headless browser test can read them. Beside it go the numbers as Parquet (see
:mod:`cubeguard.report.parquet`). The page shows the noise distribution, which reveals the p-table's
D and V, so it opens with a banner marking it internal.

For a programme of :data:`PLOT_ALL_BELOW` cubes or more, plots are drawn for a subset of
:data:`PLOT_SUBSET` cubes (the largest, and those worst on information loss and risk, unless the
caller names them) next to programme plots and Höhne's tables pooled over every cube.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from cubeguard.report import definitions, drilldown, plots, rounding
from cubeguard.report._markup import definition_list, esc, image, outcome, page, status_table, table
from cubeguard.report.errors import ReportError
from cubeguard.report.parquet import (
    CUBE_FILES,
    DRILLDOWN_FILE,
    MEASURES_FILE,
    PROGRAMME_FILES,
    SWEEP_FILE,
    write_all,
)
from cubeguard.report.summary import CubeSummary, pool

REPORT_FILE = "report.html"
PLOT_ALL_BELOW = 100
PLOT_SUBSET = 12
STATUS_KEYS = ("passed", "passes", "pass", "ok", "success", "status", "result")
_RANKINGS = (
    ("hellinger", "highest Hellinger distance"),
    ("rad", "highest relative absolute distance"),
    ("small_cells_unchanged", "largest share of small cells published unchanged"),
    ("entropy_risk_protected", "highest entropy risk r#"),
)
_CAPTIONS = {
    "noise": "Share of cells per noise value (published minus original), over cells with an original count of "
    "at least 1 and over small cells (Wilak et al. 2024). Reveals the p-table's D and V: internal only.",
    "size": "Absolute deviation by original cell-size class (Höhne 2011, Table 4b): boxes span the quartiles, "
    "the line is the median, the diamond the mean, whiskers reach the 5th and 95th percentiles and the circle "
    "marks the largest deviation. Cells with an original 0 are in no class.",
    "scatter": "Published against original count per cell, on a log scale of 1 + count; the dashed line is "
    "published = original. Big cubes show a hexbin coloured by the number of cells.",
}


def _problems(
    cubes: Sequence[str],
    measures: pd.DataFrame,
    summaries: Mapping[str, CubeSummary],
    plot_cubes: Sequence[str] | None,
    sweep: pd.DataFrame | None,
    levels: pd.DataFrame | None = None,
) -> list[str]:
    problems = []
    if len(set(cubes)) != len(cubes):
        problems.append("cubes: list each cube once")
    missing = list(dict.fromkeys(c for c in cubes if c not in measures.index))
    if missing:
        problems.append(f"measures has no row for cube(s) {missing[:5]}; pass the frame from measure_cubes")
    stray = sorted(set(summaries) - set(cubes))
    if stray:
        problems.append(f"summaries: cube(s) {stray[:5]} are not in cubes")
    unknown = [c for c in plot_cubes or () if c not in summaries]
    if unknown:
        problems.append(f"plot_cubes: no summary for cube(s) {unknown[:5]}; choose among the summarised cubes")
    if sweep is not None:
        problems += [f"sweep: {p}" for p in plots.ru_problems(sweep)]
    if levels is not None:
        problems += drilldown.problems(levels, cubes)
    return problems


def _column(measures: pd.DataFrame, measure: str) -> str | None:
    """The column of ``measure`` on the interior if there is one, else on its first scope."""
    names = [str(c) for c in measures.columns]
    if f"{measure}@interior" in names:
        return f"{measure}@interior"
    return next((c for c in names if c.partition("@")[0] == measure), None)


def choose_cubes(
    cubes: Sequence[str], measures: pd.DataFrame, summaries: Mapping[str, CubeSummary], limit: int = PLOT_SUBSET
) -> list[tuple[str, str]]:
    """Cubes to plot, each with why: all of them below :data:`PLOT_ALL_BELOW`, else a subset.

    The subset takes, in turn, the next largest cube and the next worst cube on each of
    :data:`_RANKINGS` (Hellinger distance, RAD, small cells unchanged, entropy risk r#), until
    ``limit`` cubes are chosen.
    """
    candidates = [c for c in cubes if c in summaries]
    if len(cubes) < PLOT_ALL_BELOW:
        return [(c, "") for c in candidates]
    rankings = [("largest cube", sorted(candidates, key=lambda c: -summaries[c].cells))]
    for measure, reason in _RANKINGS:
        column = _column(measures, measure)
        if column is not None:
            values = measures.loc[candidates, column].astype("float64").sort_values(ascending=False, na_position="last")
            rankings.append((f"{reason} ({column})", [str(c) for c in values.index if pd.notna(values[c])]))
    chosen: dict[str, str] = {}
    depth = 0
    while len(chosen) < min(limit, len(candidates)) and any(depth < len(r) for _, r in rankings):
        for reason, ranked in rankings:
            if depth < len(ranked) and ranked[depth] not in chosen and len(chosen) < limit:
                chosen[ranked[depth]] = reason
        depth += 1
    return list(chosen.items())


def _gates_section(gates: list[dict[str, object]] | None) -> str:
    head = '<h2 id="gates-section">Gates</h2>'
    if gates is None:
        return head + '<p class="placeholder">No gate results: the release has not been gated yet.</p>'
    if not gates:
        return head + '<p class="placeholder">No gates are configured for this release.</p>'
    columns: list[str] = []
    for row in gates:
        columns += [str(k) for k in row if str(k) not in columns]
    status = next((k for k in STATUS_KEYS if k in columns), None)
    results = [outcome(row.get(status)) for row in gates] if status else []
    failed, passed = results.count(False), results.count(True)
    reported = sum(str(row.get(status, "")).strip().lower() == "warn" for row in gates) if status else 0
    note = f" {reported} check(s) are reported only (they do not block the release)." if reported else ""
    verdict = (
        f'<p class="status-fail">{failed} of {len(gates)} gate(s) failed.{note}</p>'
        if failed
        else f'<p class="status-pass">All {passed} gate(s) passed.</p>'
        if passed == len(gates)
        else f'<p class="status-pass">All {passed} blocking gate(s) passed.{note}</p>'
        if passed + reported == len(gates)
        else f"<p>{passed} of {len(gates)} gate(s) passed; the others have no result.{note}</p>"
    )
    return head + verdict + status_table(gates, columns, status)


def _sweep_section(sweep: pd.DataFrame) -> str:
    png = plots.plot_ru_map(sweep)
    caption = (
        "R-U confidentiality map (Handbook on SDC v2, 5.8): disclosure risk against information loss, "
        "one point per parameter set; green passes the gates, red fails them."
    )
    return (
        '<h2 id="sweep-section">Parameter sweep</h2>'
        + image(png, "R-U confidentiality map", caption)
        + table(sweep.reset_index(drop=True), caption="Parameter sets", index=False)
    )


def _measures_section(measures: pd.DataFrame) -> str:
    scopes: dict[str, list[tuple[object, str]]] = {}
    for column in measures.columns:
        if str(column) in rounding.COLUMNS:  # shown per rounded cube, below
            continue
        name, _, scope = str(column).partition("@")
        scopes.setdefault(scope or "(no scope)", []).append((column, name))
    parts = [
        '<h2 id="measures-section">Measures</h2>',
        "<p>Information loss and disclosure risk per cube (Shlomo 2009, section 4; Handbook on SDC v2, 5.8 "
        "and 5.9), one table per scope: <code>interior</code> the finest cells, <code>cube</code> every cell, "
        "totals included, and margins named by their dimensions. All values are in "
        f"<code>{esc(MEASURES_FILE)}</code>.</p>",
    ]
    for scope, columns in scopes.items():
        frame = measures[[c for c, _ in columns]].set_axis([n for _, n in columns], axis=1)
        parts.append(table(frame, caption=f"scope: {scope}"))
    return "".join(parts) + _definitions(measures.columns) + _rounding_tables(measures)


def _definitions(columns: Iterable[object]) -> str:
    """What each measure shown means, and where it is defined."""
    rows = definitions.defined(str(c) for c in columns)
    if not rows:
        return ""
    return '<h3 id="measure-definitions">Definitions</h3>' + definition_list(rows)


def _rounding_tables(measures: pd.DataFrame) -> str:
    """One small table per cube published by rounding to a base; nothing if no cube is."""
    cubes = rounding.rounded_cubes(measures)
    if not cubes:
        return ""
    parts = ['<h3 id="rounding-measures">Rounding</h3>', f"<p>{esc(rounding.EXPLANATION)}</p>"]
    for c in cubes:
        parts.append(table(c.values, caption=f"cube {c.cube}: base {c.base}, steps {c.steps}"))
    return "".join(parts)


def _hoehne_tables(summary: CubeSummary, what: str) -> str:
    return (
        table(
            summary.by_dimension,
            caption=f"Höhne (2011) Table 3, {what}: cells by absolute deviation and "
            "table dimension; cum_pct = percent of cells with at most that deviation",
        )
        + table(
            summary.by_size.cells,
            caption=f"Höhne (2011) Table 4a, {what}: cells and largest deviation by original cell size",
        )
        + table(
            summary.by_size.cumulative,
            caption=f"Höhne (2011) Table 4b, {what}: percent of cells with "
            "at most the column's absolute deviation, by original cell size",
        )
    )


def _plots(summary: CubeSummary, name: str) -> str:
    return (
        image(
            plots.plot_noise(summary.noise, summary.noise_small, small_values=summary.small_values, title=name),
            f"noise distribution, {name}",
            _CAPTIONS["noise"],
        )
        + image(
            plots.plot_deviation_by_size(summary.by_size, title=name), f"deviation by size, {name}", _CAPTIONS["size"]
        )
        + image(
            plots.plot_original_vs_protected(summary.pairs, title=name),
            f"original vs published, {name}",
            _CAPTIONS["scatter"],
        )
    )


def _programme_section(programme: CubeSummary, n_cubes: int) -> str:
    return (
        '<h2 id="programme-section">Programme</h2>'
        f"<p>All {n_cubes} cubes pooled: {programme.cells:,} cells, totals and subtotals included.</p>"
        + _plots(programme, f"all {n_cubes} cubes")
        + _hoehne_tables(programme, "all cubes")
    )


def _cubes_section(chosen: list[tuple[str, str]], summaries: Mapping[str, CubeSummary], n_cubes: int) -> str:
    parts = ['<h2 id="cubes-section">Cubes</h2>']
    if len(chosen) < n_cubes:
        parts.append(
            f"<p>Plots for {len(chosen)} of {n_cubes} cubes; the programme section pools every cube, and every "
            f"cube's deviation tables are in <code>{esc(CUBE_FILES[0])}</code> and the files beside it.</p>"
        )
    for k, (cube, reason) in enumerate(chosen):
        s = summaries[cube]
        parts.append(f'<h3 id="cube-{k}">Cube {esc(cube)}</h3>')
        parts.append(f"<p>{s.cells:,} cells" + (f"; shown for: {esc(reason)}" if reason else "") + ".</p>")
        parts.append(_plots(s, f"cube {cube}"))
        parts.append(table(s.by_size.cells, caption=f"Höhne (2011) Table 4a, cube {cube}"))
    return "".join(parts)


def _nav(sections: list[tuple[str, str]], chosen: list[tuple[str, str]]) -> str:
    items = "".join(f'<li><a href="#{anchor}">{esc(label)}</a></li>' for anchor, label in sections)
    cubes = "".join(f'<li><a href="#cube-{k}">cube {esc(c)}</a></li>' for k, (c, _) in enumerate(chosen))
    return f"<nav><ul>{items}{cubes}</ul></nav>"


def _facts(facts: Mapping[str, str]) -> str:
    """The release's identity (id, config hash, when), as a definition list under the title."""
    if not facts:
        return ""
    items = "".join(f"<dt>{esc(k)}</dt><dd><code>{esc(v)}</code></dd>" for k, v in facts.items())
    return f'<dl class="facts">{items}</dl>'


def _header(title: str, n_cubes: int, facts: Mapping[str, str] | None = None) -> str:
    try:
        version = importlib.metadata.version("cubeguard")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        version = "(not installed)"
    return (
        f"<header><h1>{esc(title)}</h1>"
        f'<p class="subtitle">{n_cubes} cube(s); cubeguard {esc(version)}</p>'
        + _facts(facts or {})
        + '<p class="banner"><strong>Internal.</strong> This report shows the noise distribution, which reveals '
        "the perturbation parameters; do not publish it.</p></header>"
    )


def _footer(files: list[str]) -> str:
    items = "".join(f"<li><code>{esc(f)}</code></li>" for f in files)
    return f"<footer><p>Files beside this page:</p><ul>{items}</ul></footer>"


def write_report(
    folder: Path,
    cubes: list[str],
    measures: pd.DataFrame,
    gates: list[dict[str, object]] | None,
    title: str,
    sweep: pd.DataFrame | None = None,
    *,
    summaries: Mapping[str, CubeSummary] | None = None,
    plot_cubes: Sequence[str] | None = None,
    facts: Mapping[str, str] | None = None,
    methods: Sequence[tuple[str, str, str]] = (),
    levels: pd.DataFrame | None = None,
) -> Path:
    """Write ``report.html`` and the report's Parquet files into ``folder``; return the page's path.

    Args:
        folder: the report folder (created; Parquet files of an earlier report that this one has no
            data for are removed, see :mod:`cubeguard.report.parquet`).
        cubes: the cube ids of the release, in the order the page lists them.
        measures: one row per cube (index: cube id), as :func:`measure_cubes` returns it.
        gates: gate results, one dict per gate (any keys; a ``passed``/``status``-like key is shown as
            pass/fail), or None if the release has not been gated (a placeholder is shown).
        title: the page title.
        sweep: parameter sets with columns ``name``, ``risk``, ``utility``, ``passes`` for the R-U map.
        summaries: per cube id, its :class:`CubeSummary` (plots and deviation tables); cubes without
            one get only their row of measures.
        plot_cubes: the cubes to plot; default: all below :data:`PLOT_ALL_BELOW` cubes, else
            :func:`choose_cubes`.
        facts: what identifies the release (its id, config hash, when the report was written),
            shown under the title in this order.
        methods: sections on the release's methods, ``(anchor, navigation label, HTML)``, shown
            after the measures (e.g. a method's section, :func:`cubeguard.report.section.render`).
        levels: the drill-down by breakdown and level of some or all of ``cubes``, as
            :func:`cubeguard.report.drilldown.drilldown_frame` returns it; shown after the measures.

    Raises:
        ReportError: listing every inconsistency between the arguments.
    """
    folder = Path(folder)
    summaries = dict(summaries or {})
    problems = _problems(cubes, measures, summaries, plot_cubes, sweep, levels)
    if problems:
        raise ReportError("the report cannot be written: " + "; ".join(problems))
    folder.mkdir(parents=True, exist_ok=True)
    shown = measures.loc[list(cubes)]
    summarised = {c: summaries[c] for c in cubes if c in summaries}
    programme = pool(summarised.values()) if summarised else None
    write_all(folder, shown, summarised, programme, sweep, None if levels is None else drilldown.measures(levels))
    if plot_cubes is not None:
        chosen = [(c, "chosen by the caller") for c in plot_cubes]
    else:
        chosen = choose_cubes(cubes, shown, summarised)
    sections = [("gates-section", "Gates")]
    body = [_gates_section(gates)]
    if sweep is not None:
        sections.append(("sweep-section", "Parameter sweep"))
        body.append(_sweep_section(sweep))
    sections.append(("measures-section", "Measures"))
    body.append(_measures_section(shown))
    if levels is not None and len(levels):
        sections.append((drilldown.ANCHOR, "Drill-down by breakdown and level"))
        body.append(drilldown.drilldown_section(levels, cubes, DRILLDOWN_FILE))
    for anchor, label, html in methods:
        sections.append((anchor, label))
        body.append(html)
    if programme is not None and len(summarised) > 1:
        sections.append(("programme-section", "Programme (all cubes pooled)"))
        body.append(_programme_section(programme, len(summarised)))
    if chosen:
        sections.append(("cubes-section", "Cubes"))
        body.append(_cubes_section(chosen, summarised, len(cubes)))
    files = [MEASURES_FILE] + ([SWEEP_FILE] if sweep is not None else [])
    files += [DRILLDOWN_FILE] if levels is not None else []
    files += [*CUBE_FILES, *PROGRAMME_FILES] if summarised else []
    content = _header(title, len(cubes), facts) + _nav(sections, chosen) + "".join(body) + _footer(files)
    path = folder / REPORT_FILE
    path.write_text(page(title, content), encoding="utf-8")
    return path
