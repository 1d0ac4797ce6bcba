"""Config-time checks of the ``tables`` section, before any data is read.

Against differencing (Handbook on SDC v2, 5.2; Shlomo 2009, section 5) every category a user can
ask for must belong to one nested family: two categories of the same microdata column are either
disjoint or one contains the other. Breakdowns of one classification always are (they select
whole subtrees of one hierarchy); breakdowns of different classifications that read the same
column are checked here, category by category.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import combinations

from cubeguard.config.models import ReleaseConfig
from cubeguard.config.yamlmap import KeyPath
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.methods.registry import CUBE_METHODS

Add = Callable[[KeyPath, str], None]


def check_tables(cfg: ReleaseConfig, breakdowns: dict[str, Breakdown], add: Add) -> None:
    """Every problem of ``cfg.tables``, located at its key."""
    spec = cfg.tables
    if spec is None:
        return
    offered = []
    for k, bid in enumerate(spec.breakdowns):
        if bid not in breakdowns:
            add(("tables", "breakdowns", k), f"unknown breakdown {bid!r}; offer breakdowns declared under variables")
        elif bid in offered:
            add(("tables", "breakdowns", k), f"breakdown {bid!r} is listed twice; list each once")
        else:
            offered.append(bid)
    for k, name in enumerate(spec.populations):
        if name not in cfg.populations:
            add(
                ("tables", "populations", k),
                f"unknown population {name!r}; offer populations declared under populations",
            )
    for a, b, code_a, code_b in _overlaps([breakdowns[b] for b in offered]):
        add(
            ("tables", "breakdowns"),
            f"{a.id} {code_a!r} and {b.id} {code_b!r} overlap without one containing the other, so tables could "
            "be differenced into a category neither offers; offer breakdowns of only one of the two variables",
        )
    _check_household_size(cfg, breakdowns, offered, add)
    _check_protection(cfg, add)
    _check_means(cfg, add)


def _check_household_size(cfg: ReleaseConfig, breakdowns: dict[str, Breakdown], ids: list[str], add: Add) -> None:
    """Persons and households tables offered together must say which variable is the household size.

    Persons counts by household size are then derived from the households' (:mod:`cubeguard.tables.households`);
    a published persons cube crossing that variable would disagree with the service, so it is refused.
    """
    spec = cfg.tables
    assert spec is not None
    homes = set(cfg.input.household_columns)
    offered = [breakdowns[b] for b in ids]
    sizes = sorted(
        {b.classification.variable for b in offered if b.classification.dtype == "integer" and b.column in homes}
    )
    link = spec.household_size
    if link is None:
        _require_household_size(cfg, sizes, add)
        return
    variable = next((b for b in offered if b.classification.variable == link.variable), None)
    if variable is None or variable.classification.dtype != "integer" or variable.column not in homes:
        add(
            ("tables", "household_size", "variable"),
            f"{link.variable!r} is not an offered integer variable read from a household column "
            f"(input.household_columns); name one of: {', '.join(sizes) or 'none is offered'}",
        )
    pop = cfg.populations.get(link.population)
    if pop is None or pop.unit != "households" or link.population not in spec.populations:
        add(
            ("tables", "household_size", "population"),
            f"{link.population!r} is not an offered population of unit households; name one listed in tables.populations",
        )
    for k, cube in enumerate(cfg.hypercubes):
        persons = cfg.populations.get(cube.population)
        crossed = [
            b for b in cube.breakdowns if b in breakdowns and breakdowns[b].classification.variable == link.variable
        ]
        if persons is not None and persons.unit == "persons" and crossed:
            add(
                ("hypercubes", k, "breakdowns"),
                f"persons hypercube {cube.id} crosses {link.variable}, whose persons counts the table service derives "
                "from the households' counts, so the two would disagree; publish it for the households population, "
                "or drop tables.household_size and the households population from tables",
            )


def _require_household_size(cfg: ReleaseConfig, sizes: list[str], add: Add) -> None:
    """Persons and households populations with a candidate size variable: the link must be named."""
    spec = cfg.tables
    assert spec is not None
    units = {cfg.populations[p].unit: p for p in spec.populations if p in cfg.populations}
    if {"persons", "households"} <= set(units) and sizes:
        add(
            ("tables",),
            f"tables offers persons and households populations with {sizes[0]}, an integer variable of a "
            "household column: a persons table and a households table by household size could be intersected "
            f"into original counts; name it in tables.household_size, e.g. {{variable: {sizes[0]}, population: "
            f"{units['households']}}}, or offer one kind of population",
        )


def _check_means(cfg: ReleaseConfig, add: Add) -> None:
    """A mean is the perturbed sum over the perturbed count: its column needs the step's magnitude perturbation."""
    spec = cfg.tables
    assert spec is not None
    step = cfg.steps[0] if cfg.steps else None
    declared = getattr(step, "magnitudes", {})
    for name, mean in spec.means.items():
        if mean.column not in declared:
            add(
                ("tables", "means", name),
                f"the mean of column {mean.column!r} would be published from its exact sum, which gives the counts "
                f"back; perturb its sums with the cell key step (steps[0].magnitudes.{mean.column}) or drop the mean",
            )


def _check_protection(cfg: ReleaseConfig, add: Add) -> None:
    """Tables take the release's one step, which must give a cell one value whatever table holds it.

    A method says so with :attr:`~cubeguard.methods.base.CubeMethod.cellwise`: the cell key method
    does; so does random rounding whose draws are the cell keys (no seed) and whose totals are
    rounded on their own (``margins: independent``). Summed margins, seeded draws and every other
    method make a cell's value depend on the table around it.
    """
    step = cfg.steps[0] if len(cfg.steps) == 1 else None
    consistent = step is not None and step.cubes is None and CUBE_METHODS[step.method].cellwise(step)
    if not consistent:
        add(
            ("tables",),
            "flexible tables are protected with the release's step, so that a cell a user builds equals the "
            "published one: give the release exactly one step without 'cubes', a cell_key step or a "
            "random_rounding step with margins: independent and no seed",
        )


def _overlaps(offered: list[Breakdown]) -> Iterator[tuple[Breakdown, Breakdown, str, str]]:
    """Pairs of categories of different classifications on one column that cross (the first per pair)."""
    for a, b in combinations(offered, 2):
        if a.column != b.column or a.classification is b.classification:
            continue
        for (code_a, va), (code_b, vb) in ((x, y) for x in _categories(a) for y in _categories(b)):
            common = va & vb
            if common and common != va and common != vb:
                yield a, b, code_a, code_b
                break


def _categories(bd: Breakdown) -> list[tuple[str, frozenset[str]]]:
    """Every code of ``bd`` with the raw values it covers (as text, so codes and integers compare)."""
    cls = bd.classification
    out = []
    for k in bd.selected:
        stack, values = [k], set[str]()
        while stack:
            x = stack.pop()
            stack.extend(cls.children[x])
            values.update(str(v) for v in cls.leaf_values[x])
        out.append((cls.codes[k], frozenset(values)))
    return out
