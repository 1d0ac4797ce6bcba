"""A release's :class:`~cubeguard.config.models.GateSpec` applied to one cube pair and its row of measures.

Each check is named as its ``gates:`` key (:data:`CHECKS`) and gives a verdict; a failed check fails
the gate when it is *blocking*. Every check set in the spec is blocking, except additivity, which is
always reported but blocking only when the release promises additive tables (``require_additivity``;
Handbook on SDC v2 (Hundepool et al. 2024), 5.4-5.5). The cube is read once, slab by slab, for all
checks (:mod:`cubeguard.gates.slabs`); the original only when the small-cells check needs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import xarray as xr

from cubeguard.config.models import GateSpec
from cubeguard.gates import attack as attack_gate
from cubeguard.gates import distance, small_cells
from cubeguard.gates.additivity import AdditivityFacts, AdditivityTally
from cubeguard.gates.forbidden import ForbiddenFacts, ValueTally
from cubeguard.gates.slabs import DEFAULT_SLAB_CELLS, iter_slabs, layout
from cubeguard.gates.small_cells import SMALL_VALUES, SmallCellFacts, SmallCellTally

#: The checks, in the order they are reported (named as the ``gates:`` keys).
CHECKS = (
    "forbidden_values",
    "max_small_cells_unchanged",
    "require_additivity",
    "max_hellinger",
    "max_mean_absolute_deviation",
    "max_recovered_by_attack",
    "attack_self_test",
)
DISTANCES = (("max_hellinger", distance.HELLINGER), ("max_mean_absolute_deviation", distance.MEAN_ABSOLUTE_DEVIATION))


@dataclass(frozen=True)
class CheckResult:
    """One check on one cube.

    Attributes:
        check: its name (:data:`CHECKS`).
        observed: what was observed (cells, share or measure; NaN when undefined).
        threshold: what is required, in words.
        passed: the verdict.
        blocking: whether a failure fails the gate.
    """

    check: str
    observed: int | float
    threshold: str
    passed: bool
    blocking: bool

    @property
    def fails_gate(self) -> bool:
        """A blocking check that failed."""
        return self.blocking and not self.passed


@dataclass(frozen=True)
class CubeGateResult:
    """The facts the gates observed on one cube, and the verdicts.

    Attributes:
        cube: the cube id.
        forbidden: the forbidden-values facts (None: no forbidden values set).
        small_cells: the small-cell facts (None: no bound set).
        additivity: the additivity facts (None: not evaluated).
        distances: one per distance bound set, as :data:`DISTANCES`.
        checks: the verdicts, in :data:`CHECKS` order.
        attack: the attack findings (None: no attack bound set).
    """

    cube: str
    forbidden: ForbiddenFacts | None
    small_cells: SmallCellFacts | None
    additivity: AdditivityFacts | None
    distances: tuple[distance.DistanceFacts, ...]
    checks: tuple[CheckResult, ...]
    attack: attack_gate.AttackGateFacts | None = None

    @property
    def failing(self) -> tuple[str, ...]:
        """The checks that fail the gate."""
        return tuple(c.check for c in self.checks if c.fails_gate)

    def check(self, name: str) -> CheckResult | None:
        """The result of check ``name``, None if it was not evaluated."""
        return next((c for c in self.checks if c.check == name), None)


def threshold(check: str, gates: GateSpec) -> str:
    """What ``check`` requires under ``gates``, in words (for reports and Data Docs)."""
    if check == "forbidden_values":
        return f"no cell in {{{', '.join(map(str, sorted(set(gates.forbidden_values))))}}}"
    if check == "require_additivity":
        return "0 non-additive cells" + ("" if gates.require_additivity else " (reported only)")
    if check == "max_recovered_by_attack":
        return f"<= {gates.max_recovered_by_attack} small cells recovered with certainty"
    if check == "attack_self_test":
        return "0 small cells of the unprotected counts missed (else an attack is broken)"
    bound = getattr(gates, check)
    return f"<= {bound:.4g}"


def blocking(check: str, gates: GateSpec) -> bool:
    """Whether a failure of ``check`` fails the gate: every check set, additivity only when required."""
    return gates.require_additivity if check == "require_additivity" else True


def evaluate_cube(
    original: xr.Dataset,
    protected: xr.Dataset,
    measures: Mapping[str, float],
    gates: GateSpec,
    *,
    cube: str = "",
    additivity: bool | None = None,
    scope: str = distance.SCOPE,
    small_values: tuple[int, ...] = SMALL_VALUES,
    slab_cells: int = DEFAULT_SLAB_CELLS,
) -> CubeGateResult:
    """Apply ``gates`` to one cube pair and its row of :func:`~cubeguard.measures.table.measure_cube`.

    Args:
        original: the original cube (read only for the small-cells check); may be lazy.
        protected: the protected cube, same cells; may be lazy.
        measures: the cube's measures, ``<measure>@<scope>`` keys (a missing one counts as NaN).
        gates: the thresholds.
        cube: the cube id, for the result.
        additivity: evaluate additivity (default: only when required; a release reports it always).
        scope: the measures' scope the distance bounds read.
        small_values: the original values that make a cell small.
        slab_cells: about how many cells to read at once.

    Raises:
        GateInputError: if a cube has no ``count``, a count is missing, or the cubes' cells differ.
        cubeguard.cubes.tree.InvalidCubeError: if a dimension breaks the cube convention.
    """
    lay, o, p = layout(original, protected)
    values = ValueTally() if gates.forbidden_values else None
    small = SmallCellTally(small_values) if gates.max_small_cells_unchanged is not None else None
    sums = AdditivityTally(lay) if (gates.require_additivity if additivity is None else additivity) else None
    if values or small or sums:
        for lo, o_slab, p_slab in iter_slabs(o if small else None, p, slab_cells):
            if values:
                values.add(p_slab)
            if small:
                assert o_slab is not None
                small.add(o_slab, p_slab)
            if sums:
                sums.add(lo, p_slab)
    checks: list[CheckResult] = []

    def verdict(check: str, observed: int | float, passed: bool) -> None:
        checks.append(CheckResult(check, observed, threshold(check, gates), passed, blocking(check, gates)))

    forbidden = values.facts(gates.forbidden_values) if values else None
    if forbidden:
        verdict("forbidden_values", forbidden.cells, forbidden.passed)
    small_facts = small.facts() if small else None
    if small_facts:
        assert gates.max_small_cells_unchanged is not None
        share = small_facts.share
        verdict("max_small_cells_unchanged", share, small_cells.passes(share, gates.max_small_cells_unchanged))
    found = sums.facts() if sums else None
    if found:
        verdict("require_additivity", found.violations, found.additive)
    distances = []
    for check, measure in DISTANCES:
        bound = getattr(gates, check)
        if bound is not None:
            facts = distance.check_distance(measures, measure, bound, scope)
            distances.append(facts)
            verdict(check, facts.value, facts.passed)
    attacked = None
    if gates.max_recovered_by_attack is not None:
        attacked = attack_gate.check_attack(measures, gates.max_recovered_by_attack)
        verdict("max_recovered_by_attack", attacked.recovered, attacked.recovered_passed)
        verdict("attack_self_test", attacked.missed, attacked.self_test_passed)
    return CubeGateResult(cube, forbidden, small_facts, found, tuple(distances), tuple(checks), attacked)
