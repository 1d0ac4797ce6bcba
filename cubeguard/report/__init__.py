"""The protection report: measures, gate results and plots of a release as one offline HTML page.

* :mod:`~cubeguard.report.summary` reduces an original/protected cube pair to what the plots and
  deviation tables need (small, and additive over cubes, so a programme can be pooled);
* :mod:`~cubeguard.report.tables` pools Höhne's deviation tables over cubes and writes them as Parquet;
* :mod:`~cubeguard.report.plots` draws the figures as PNG bytes (matplotlib's Agg canvas, no pyplot);
* :mod:`~cubeguard.report.drilldown` names hierarchy levels and writes the drill-down by breakdown
  and level (a collapsible table per cube, a heat-map of all);
* :mod:`~cubeguard.report.parquet` writes the measures and deviation tables as Parquet;
* :mod:`~cubeguard.report.html` writes ``report.html`` (self-contained) and the Parquet files beside it;
* :mod:`~cubeguard.report.build` measures a release folder's stores and writes its report.

The report shows the empirical noise distribution, which reveals the p-table parameters (D, V):
it is an internal document, like the p-table itself, not a publishable output.
"""
