"""The gate suites, built in code from a release's :class:`~cubeguard.config.models.GateSpec`.

Two suites (GX Expectation Suites, never loaded from files: STACK.md's trap is that a saved suite
loaded without its custom classes silently drops them):

* ``cube_gates``, run on the facts :mod:`cubeguard.gates` found on each cube pair
  (:mod:`expectations.facts`): forbidden published values (if any are listed), the share of small
  cells left unchanged (if a maximum is set) and additivity, *required* (severity ``critical``)
  when ``require_additivity`` and *reported* (severity ``warning``) otherwise;
* ``measures_gates``, run on the per-cube measures table: the Hellinger distance and the mean
  absolute deviation per cell within their bounds (each if set), and the attack gate (small cells
  recovered by the attacks, and their self-test) when ``max_recovered_by_attack`` is set.

Each expectation's ``meta`` carries the threshold in words for the gate report; the words and
which checks block come from :mod:`cubeguard.gates.evaluate`, as the verdicts do. The expected
lengths are computed independently of the builders so that :func:`expectations.gates.run_gates`
can assert them.
"""

from __future__ import annotations

import great_expectations as gx
from great_expectations.expectations.expectation import Expectation

from cubeguard.config.models import GateSpec
from cubeguard.gates.distance import HELLINGER, MEAN_ABSOLUTE_DEVIATION, measure_column
from cubeguard.gates.evaluate import DISTANCES, blocking, threshold
from expectations.additivity import ExpectTotalsEqualSumOfChildren
from expectations.attack import ExpectAttackSelfTestToMissNothing, ExpectSmallCellsRecoveredByAttackAtMost
from expectations.distance import ExpectDistanceWithinBound
from expectations.forbidden import ExpectPublishedCountsOutsideForbiddenSet
from expectations.small_cells import DEFAULT_SMALL_VALUES, ExpectSmallCellsUnchangedShareToBeAtMost

CUBE_SUITE = "cube_gates"
MEASURES_SUITE = "measures_gates"
__all__ = ["CUBE_SUITE", "HELLINGER", "MEAN_ABSOLUTE_DEVIATION", "MEASURES_SUITE", "build_suites", "measure_column"]


def cube_expectations(gates: GateSpec, small_values: tuple[int, ...] = DEFAULT_SMALL_VALUES) -> list[Expectation]:
    """The expectations run on every cube's facts frame."""
    out: list[Expectation] = []
    if gates.forbidden_values:
        values = sorted(set(gates.forbidden_values))
        out.append(
            ExpectPublishedCountsOutsideForbiddenSet(
                value_set=values, meta={"threshold": threshold("forbidden_values", gates)}
            )
        )
    if gates.max_small_cells_unchanged is not None:
        share = gates.max_small_cells_unchanged
        out.append(
            ExpectSmallCellsUnchangedShareToBeAtMost(
                max_unchanged_share=share,
                small_values=list(small_values),
                meta={"threshold": threshold("max_small_cells_unchanged", gates)},
            )
        )
    out.append(
        ExpectTotalsEqualSumOfChildren(
            severity="critical" if blocking("require_additivity", gates) else "warning",
            meta={"threshold": threshold("require_additivity", gates)},
        )
    )
    return out


def measures_expectations(gates: GateSpec, scope: str = "interior") -> list[Expectation]:
    """The expectations run on the per-cube measures table."""
    out: list[Expectation] = []
    for check, measure in DISTANCES:
        bound = getattr(gates, check)
        if bound is not None:
            out.append(
                ExpectDistanceWithinBound(
                    column=measure_column(measure, scope), max_value=bound, meta={"threshold": threshold(check, gates)}
                )
            )
    if gates.max_recovered_by_attack is not None:
        out.append(
            ExpectSmallCellsRecoveredByAttackAtMost(
                max_value=gates.max_recovered_by_attack, meta={"threshold": threshold("max_recovered_by_attack", gates)}
            )
        )
        out.append(ExpectAttackSelfTestToMissNothing(meta={"threshold": threshold("attack_self_test", gates)}))
    return out


def expected_lengths(gates: GateSpec) -> dict[str, int]:
    """How many expectations each suite must hold for ``gates`` (counted from the spec alone)."""
    return {
        CUBE_SUITE: int(bool(gates.forbidden_values)) + int(gates.max_small_cells_unchanged is not None) + 1,
        MEASURES_SUITE: int(gates.max_hellinger is not None)
        + int(gates.max_mean_absolute_deviation is not None)
        + 2 * int(gates.max_recovered_by_attack is not None),
    }


def build_suites(gates: GateSpec, scope: str = "interior") -> dict[str, gx.ExpectationSuite]:
    """Both suites (unattached to a context); the measures suite may be empty."""
    return {
        CUBE_SUITE: gx.ExpectationSuite(name=CUBE_SUITE, expectations=cube_expectations(gates)),
        MEASURES_SUITE: gx.ExpectationSuite(name=MEASURES_SUITE, expectations=measures_expectations(gates, scope)),
    }
