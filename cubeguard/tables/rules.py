"""The rules a flexible table must pass (Shlomo 2009, section 5), each refusing with its own message.

Form rules look only at the query: offered breakdowns and populations, one level per variable,
the number of variables (filters count: they define the table's population), the table's size,
offered filter codes and means, and no mean of a column the table's categories are cut from. Value rules look at the *published* table: its total (minimum
population), its total per interior cell (minimum average cell size) and its share of small
published counts, so a refusal discloses nothing beyond what the table itself would.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from cubeguard.config.tables import TablesSpec
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.tables.query import TableQuery, TableRefused


def check_form(query: TableQuery, spec: TablesSpec, offered: dict[str, Breakdown]) -> None:
    """Refuse a query whose form breaks a rule (nothing is tabulated for it)."""
    for parameter, bids in (("breakdowns", query.breakdowns), ("filters", list(query.filters))):
        for bid in bids:
            if bid not in offered:
                raise TableRefused(
                    "offered_breakdowns",
                    f"breakdown {bid!r} is not offered; choose one of {', '.join(offered)}",
                    parameter,
                )
    if query.population not in spec.populations:
        raise TableRefused(
            "offered_populations",
            f"population {query.population!r} is not offered; choose one of {', '.join(spec.populations)}",
            "population",
        )
    variables = [offered[b].classification.variable for b in query.breakdowns]
    twice = sorted({v for v in variables if variables.count(v) > 1})
    if twice:
        raise TableRefused(
            "one_level_per_variable", f"variable {twice[0]} appears twice; cross one level of it", "breakdowns"
        )
    for bid, code in query.filters.items():
        if code not in offered[bid].codes:
            raise TableRefused(
                "offered_filters", f"code {code!r} is not a category of {bid}; filter on one of its codes", "filters"
            )
    used = set(variables) | {offered[b].classification.variable for b in query.filters}
    if len(used) > spec.max_dimensions:
        raise TableRefused(
            "max_dimensions",
            f"the table uses {len(used)} variables (filters included) but at most {spec.max_dimensions} may be "
            "combined; drop a breakdown or a filter",
            "breakdowns",
        )
    cells = math.prod(len(offered[b].codes) for b in query.breakdowns)
    if cells > spec.max_cells:
        raise TableRefused(
            "max_cells",
            f"the table has {cells:,} cells but at most {spec.max_cells:,} are served; choose coarser levels",
            "breakdowns",
        )
    if query.mean is not None and query.mean not in spec.means:
        known = ", ".join(spec.means) or "none are offered"
        raise TableRefused("offered_means", f"no mean named {query.mean!r}; choose one of: {known}", "mean")
    column = spec.means[query.mean].column if query.mean is not None else None
    crossed = [b for b in [*query.breakdowns, *query.filters] if offered[b].column == column]
    if crossed:
        raise TableRefused(
            "mean_of_a_crossed_column",
            f"the mean of {column} in categories of {crossed[0]} bounds each cell's count by its sum (in one-year "
            f"ages, count = sum / age); drop {crossed[0]} or the mean",
            "mean",
        )


def check_values(counts: npt.NDArray[np.int64], bds: Sequence[Breakdown], spec: TablesSpec) -> None:
    """Refuse a table whose published counts (every cell, totals included) break a rule."""
    refused = value_problem(counts, bds, spec)
    if refused is not None:
        raise refused


def value_problem(counts: npt.NDArray[np.int64], bds: Sequence[Breakdown], spec: TablesSpec) -> TableRefused | None:
    """The first rule on a table's published values that ``counts`` breaks (None: it passes).

    ``counts`` holds every cell of the table along ``bds``, totals included; with no breakdown left
    (one area of a one-way table) it is that area's one count.
    """
    total = int(counts[(0,) * counts.ndim])  # pre-order: the grand total comes first on every axis
    if total < spec.min_population:
        return TableRefused(
            "min_population",
            f"the table's population is {total:,}, below the minimum of {spec.min_population:,}; "
            "widen the filters or choose a larger population",
        )
    average = total / math.prod(len(b.bottom) for b in bds)  # per interior cell (one when nothing is crossed)
    if average < spec.min_average_cell_size:
        return TableRefused(
            "min_average_cell_size",
            f"the table averages {average:.1f} per cell, below the minimum of {spec.min_average_cell_size:g}; "
            "choose coarser levels or fewer breakdowns",
        )
    if spec.max_small_cell_share >= 1.0:  # no share is above it: the interior is not gathered (a large copy)
        return None
    interior = counts[np.ix_(*[b.bottom for b in bds])] if bds else np.asarray(counts).reshape(1)
    small = float(np.mean((interior >= 1) & (interior <= spec.small_count)))
    if small > spec.max_small_cell_share:
        return TableRefused(
            "max_small_cell_share",
            f"{small:.1%} of the table's cells are small (1 to {spec.small_count}), above the maximum of "
            f"{spec.max_small_cell_share:.0%}; choose coarser levels or fewer breakdowns",
        )
    return None


def area_problems(counts: npt.NDArray[np.int64], bds: Sequence[Breakdown], spec: TablesSpec) -> dict[int, TableRefused]:
    """Per code of the first breakdown (an area), the rule its slice breaks, judged as a table filtered to it.

    A slice of the first axis holds exactly the cells of the same table filtered to that code, so an
    area is served when a filtered table of it would be, and withheld otherwise.
    """
    found = {}
    for index in range(counts.shape[0]):
        refused = value_problem(counts[index], bds[1:], spec)
        if refused is not None:
            found[index] = refused
    return found
