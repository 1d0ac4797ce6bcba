"""Suites built in code from GateSpec: lengths, severities, descriptions, registration."""

from __future__ import annotations

import doctest

import pytest

import cubeguard.gates.additivity
import cubeguard.gates.distance
import cubeguard.gates.forbidden
import expectations.facts
from cubeguard.config.models import GateSpec
from expectations.suites import CUBE_SUITE, MEASURES_SUITE, build_suites, expected_lengths

FULL = GateSpec(
    forbidden_values=[2, 1, 2],
    max_small_cells_unchanged=0.25,
    require_additivity=True,
    max_hellinger=0.1,
    max_mean_absolute_deviation=1.5,
)


@pytest.mark.parametrize(
    ("gates", "cube", "measures"),
    [(GateSpec(), 1, 0), (FULL, 3, 2), (GateSpec(forbidden_values=[1], max_hellinger=0.2), 2, 1)],
)
def test_suites_have_the_expected_lengths(gates: GateSpec, cube: int, measures: int) -> None:
    suites = build_suites(gates)
    assert expected_lengths(gates) == {CUBE_SUITE: cube, MEASURES_SUITE: measures}
    assert {n: len(s.expectations) for n, s in suites.items()} == {CUBE_SUITE: cube, MEASURES_SUITE: measures}


def test_expectations_carry_business_names_thresholds_and_descriptions() -> None:
    cube = build_suites(FULL)[CUBE_SUITE].expectations
    assert [type(e).__name__ for e in cube] == [
        "ExpectPublishedCountsOutsideForbiddenSet",
        "ExpectSmallCellsUnchangedShareToBeAtMost",
        "ExpectTotalsEqualSumOfChildren",
    ]
    assert cube[0].value_set == [1, 2] and cube[0].column == "published"  # type: ignore[attr-defined]
    assert "{1, 2}" in (cube[0].description or "") and "25.0%" in (cube[1].description or "")
    assert [e.meta["threshold"] for e in cube] == ["no cell in {1, 2}", "<= 0.25", "0 non-additive cells"]
    measures = build_suites(FULL, scope="cube")[MEASURES_SUITE].expectations
    assert [e.column for e in measures] == ["hellinger@cube", "average_absolute_distance@cube"]  # type: ignore[attr-defined]


def test_additivity_is_required_only_when_promised() -> None:
    required = build_suites(FULL)[CUBE_SUITE].expectations[-1]
    reported = build_suites(GateSpec())[CUBE_SUITE].expectations[-1]
    assert required.severity == "critical" and "reported only" not in (required.description or "")
    assert reported.severity == "warning" and "reported only" in (reported.description or "")


def test_custom_expectations_are_registered_with_gx() -> None:
    # imported here: importing GX before the expectations package would skip its warning guard
    from great_expectations.expectations.registry import get_expectation_impl

    for name in ("expect_published_counts_outside_forbidden_set", "expect_totals_equal_sum_of_children"):
        assert get_expectation_impl(name).__module__.startswith("expectations.")


def test_a_distance_bound_is_required() -> None:
    from expectations.distance import ExpectDistanceWithinBound

    with pytest.raises(ValueError, match="give max_value"):
        ExpectDistanceWithinBound(column="hellinger@interior", min_value=0)


@pytest.mark.parametrize(
    "module", [expectations.facts, cubeguard.gates.additivity, cubeguard.gates.forbidden, cubeguard.gates.distance]
)
def test_docstring_examples(module) -> None:
    outcome = doctest.testmod(module)
    assert outcome.attempted > 0 and outcome.failed == 0
