"""Check that a cell shared by several protected cubes is published with one value everywhere.

Two cells are the same cell when they count the same population and, for every variable, the same
code (a dimension at its total counts as the variable being absent): e.g. GEO x SEX totals appear in
many EU hypercubes. The cell key method guarantees this by construction (Wilak et al. 2024; Handbook on SDC
v2 5.4: the cell key depends only on the set of records); this check proves it on a release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import xarray as xr


@dataclass
class ConsistencyReport:
    """Shared cells compared and the mismatches found (up to 20 examples)."""

    pairs: int = 0
    shared_cells: int = 0
    mismatches: int = 0
    examples: list[dict[str, object]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every shared cell has one published value."""
        return self.mismatches == 0


def _by_variable(cube: xr.Dataset, keep: set[str], variables: dict[str, str], value: str) -> xr.DataArray:
    """``value`` with dims renamed to variables; dims of other variables fixed at their total."""
    arr = cube[value]
    for dim in arr.dims:
        if variables[str(dim)] not in keep:
            arr = arr.isel({dim: 0})  # the total comes first in pre-order
    arr = arr.reset_coords(drop=True)
    return arr.rename({d: variables[str(d)] for d in arr.dims})


def check_consistency(cubes: dict[str, xr.Dataset], value: str = "count") -> ConsistencyReport:
    """Compare every pair of cubes (same population) on the cells they share."""
    report = ConsistencyReport()
    for (a_id, a), (b_id, b) in combinations(sorted(cubes.items()), 2):
        if a.attrs.get("population") != b.attrs.get("population"):
            continue
        va, vb = dict(a.attrs["variables"]), dict(b.attrs["variables"])
        shared = set(va.values()) & set(vb.values())
        x, y = xr.align(_by_variable(a, shared, va, value), _by_variable(b, shared, vb, value), join="inner")
        y = y.transpose(*x.dims)
        report.pairs += 1
        report.shared_cells += int(x.size)
        bad = np.asarray(x.values != y.values)
        report.mismatches += int(bad.sum())
        for pos in np.argwhere(bad)[: max(0, 20 - len(report.examples))]:
            cell = {str(d): str(x[d].values[i]) for d, i in zip(x.dims, pos, strict=True)}
            report.examples.append(
                {"cubes": [a_id, b_id], "cell": cell, "values": [int(x.values[tuple(pos)]), int(y.values[tuple(pos)])]}
            )
    return report
