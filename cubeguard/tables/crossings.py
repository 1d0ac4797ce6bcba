"""The finest crossings of the offered variables, tabulated once, so a new table is summed, not tabulated.

A flexible table crosses at most ``max_dimensions`` variables (Shlomo 2009, section 5). Every
such table of the default population without filters, at any offered levels, is the sum of the
crossing of its variables (plus others, summed out) at their finest offered levels
(:mod:`cubeguard.tables.derive`: counts and key sums add up exactly, so the published values are
those a pass over the records gives). So the engine tabulates, when a release is served, every
crossing of ``max_dimensions`` offered variables at their finest levels, smallest first, up to
``tables.precompute_cells`` bottom cells (16 bytes each), in background threads; a table whose
crossing is ready costs a pass over the crossing per dimension instead of a pass over the records
(about 20 ms at 10M records). Until then, and for other populations, filters or means, the engine
tabulates as before.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.tables.derive import Bottoms, Entry, Refinements, expanded, plan_from

Tabulate = Callable[[list[Breakdown]], Bottoms]


class Crossings:
    """Bottom cells of the finest crossings of ``size`` offered variables; thread-safe.

    Attributes:
        planned: the crossings (as variable sets) to tabulate, smallest first, within the budget.
    """

    def __init__(self, offered: dict[str, Breakdown], size: int, budget_cells: int, refines: Refinements) -> None:
        finest: dict[str, Breakdown] = {}
        for bd in offered.values():
            var = bd.classification.variable
            if var not in finest or bd.n_bottom > finest[var].n_bottom:
                finest[var] = bd
        self.refines = refines
        self._finest = [finest[v] for v in sorted(finest)]
        combos = itertools.combinations(self._finest, min(size, len(self._finest)))
        by_size = sorted(combos, key=lambda c: (math.prod(b.n_bottom for b in c), [b.id for b in c]))
        self.planned: list[tuple[Breakdown, ...]] = []
        used = 0
        for combo in by_size:
            cells = math.prod(b.n_bottom for b in combo)
            if used + cells > budget_cells:
                break
            self.planned.append(combo)
            used += cells
        self.cells = used
        self._tables: dict[frozenset[str], Entry] = {}
        self._lock = threading.Lock()

    @property
    def ready(self) -> int:
        """How many planned crossings are tabulated."""
        return len(self._tables)

    def build(self, tabulate: Tabulate, workers: int = 2) -> None:
        """Tabulate every planned crossing (``tabulate`` gives a table's bottom cells), ``workers`` at a time."""

        def one(combo: tuple[Breakdown, ...]) -> None:
            counts, key_sums = tabulate(list(combo))
            with self._lock:
                self._tables[_variables(combo)] = Entry(combo, counts, key_sums)

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="crossings") as pool:
            list(pool.map(one, self.planned))

    def derive(self, bds: list[Breakdown]) -> Bottoms | None:
        """The table of ``bds`` (margins included) summed from the smallest ready crossing that holds their variables."""
        wanted = _variables(bds)
        if len(wanted) != len(bds):
            return None  # a variable twice: no crossing holds it twice
        with self._lock:
            holding = [e for key, e in self._tables.items() if wanted <= key]
        for entry in sorted(holding, key=lambda e: e.counts.size):
            plan = plan_from(entry.breakdowns, bds, self.refines)
            if plan is not None:
                return expanded(entry, plan, bds)
        return None


def _variables(bds: tuple[Breakdown, ...] | list[Breakdown]) -> frozenset[str]:
    return frozenset(b.classification.variable for b in bds)
