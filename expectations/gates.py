"""Release gates: run the gate suites on the facts of every cube and on the measures table.

:func:`run_gates` builds the suites of :mod:`expectations.suites` in code in a fresh ephemeral
context and asserts their lengths. For each cube pair, :func:`cubeguard.gates.evaluate_cube` reads
the cubes (lazily, slab by slab) and computes the facts; GX validates the compact frame of those facts
(:mod:`expectations.facts`: a few hundred rows, not one per cell). The per-cube measures table is
validated as it is. Data Docs are written offline-readable (one validation per cube) and a frozen
:class:`~expectations.report.GateReport` is returned. An expectation that errors fails the gate; so
does a result that does not account for every expectation of its suite; and a GX verdict that
differs from the core's on the same facts is a bug (:class:`~cubeguard.errors.InternalError`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from pathlib import Path
from typing import Any

import great_expectations as gx
import pandas as pd
import xarray as xr
from great_expectations.core.batch_definition import BatchDefinition
from great_expectations.core.run_identifier import RunIdentifier
from great_expectations.data_context import EphemeralDataContext
from great_expectations.data_context.types.resource_identifiers import (
    ExpectationSuiteIdentifier,
    ValidationResultIdentifier,
)
from great_expectations.expectations.metadata_types import FailureSeverity
from great_expectations.validator.v1_validator import Validator

from cubeguard.config.models import GateSpec
from cubeguard.errors import InternalError
from cubeguard.gates import CubeGateResult, evaluate_cube
from cubeguard.gates.attack import MISSED_COLUMN, RECOVERED_COLUMN
from cubeguard.gates.distance import measure_column
from cubeguard.gates.evaluate import DISTANCES
from cubeguard.gates.slabs import DEFAULT_SLAB_CELLS
from expectations.context import build_docs, ephemeral_context
from expectations.distance import CUBE_COLUMN
from expectations.facts import cube_frame
from expectations.offline_docs import make_offline
from expectations.report import GateOutcome, GateReport, errored
from expectations.suites import CUBE_SUITE, MEASURES_SUITE, build_suites, cube_expectations, expected_lengths

SOURCE = "release"
MEASURES_ASSET = "_measures"  # a data asset name no cube id takes in practice
_COMPLETE = {"result_format": "COMPLETE", "unexpected_index_column_names": [CUBE_COLUMN]}
_CHECK_OF = {
    "ExpectPublishedCountsOutsideForbiddenSet": "forbidden_values",
    "ExpectSmallCellsUnchangedShareToBeAtMost": "max_small_cells_unchanged",
    "ExpectTotalsEqualSumOfChildren": "require_additivity",
}


ADDITIVE_SUITE = f"{CUBE_SUITE}_additive"  # the cube suite for cubes whose method promises additivity


def _add_suites(context: EphemeralDataContext, gates: GateSpec, scope: str) -> dict[str, gx.ExpectationSuite]:
    suites = {name: context.suites.add(suite) for name, suite in build_suites(gates, scope).items()}
    expected = expected_lengths(gates)
    for name, suite in suites.items():
        if len(suite.expectations) != expected[name]:
            raise InternalError(
                f"suite {name!r} holds {len(suite.expectations)} expectations, expected {expected[name]}; "
                "this is a bug in cubeguard"
            )
    return suites


def _validate(
    context: EphemeralDataContext,
    batch: BatchDefinition,
    name: str,
    suite: gx.ExpectationSuite,
    frame: pd.DataFrame,
    run_id: RunIdentifier,
    result_format: dict[str, Any] | str = "SUMMARY",
) -> gx.core.ExpectationSuiteValidationResult:
    """Validate ``frame`` as the batch ``name`` and store the result for the Data Docs.

    What ``ValidationDefinition.run`` does, on one shared whole-dataframe batch definition: adding an
    asset and a definition per cube makes GX re-serialise its whole project config to YAML each time
    (about 40 ms per cube). The result is stored under the batch id ``release-<name>`` (one Data Docs
    page per cube, named as before) and ``name`` shown as its data asset.
    """
    results = Validator(
        batch_definition=batch, batch_parameters={"dataframe": frame}, result_format=result_format
    ).validate_expectation_suite(suite)
    results.success = _gate_verdict(suite, results)  # the page's "Status" says what the terminal says
    results.meta["run_id"] = run_id
    results.meta["validation_time"] = run_id.run_time
    results.meta["batch_parameters"] = {"dataframe": "<DATAFRAME>"}
    spec = results.meta.get("batch_spec")
    if spec is not None:
        spec["data_asset_name"] = name  # the page's "Data asset:" (None before, with one asset per cube too)
    suite_id = ExpectationSuiteIdentifier(name=suite.name)
    key = ValidationResultIdentifier(
        expectation_suite_identifier=suite_id, run_id=run_id, batch_identifier=f"{SOURCE}-{name}"
    )
    context.validation_results_store.store_validation_results(results, key, suite_id)
    return results


def _gate_verdict(suite: gx.ExpectationSuite, results: Any) -> bool:
    """Whether this validation lets the gate pass: no blocking expectation failed and none errored.

    GX calls a validation failed when any expectation failed, warnings included, so its Data Docs
    showed "Failed" on every cube whose report-only additivity check failed while the gate passed.
    """
    critical = {e.id for e in suite.expectations if e.severity == FailureSeverity.CRITICAL}
    for r in results.results:
        if errored(r.exception_info) is not None or (r.expectation_config.id in critical and not r.success):
            return False
    return True


def _by_expectation(suite: gx.ExpectationSuite, result: Any) -> dict[str, Any]:
    """Results keyed by expectation id; every expectation of the suite must have exactly one."""
    by_id = {r.expectation_config.id: r for r in result.results}
    ids = [e.id for e in suite.expectations]
    if len(result.results) != len(ids) or set(by_id) != set(ids):
        raise InternalError(
            f"suite {suite.name!r} returned {len(result.results)} results for {len(ids)} expectations; "
            "this is a bug in cubeguard"
        )
    return by_id


def _observed(result: dict[str, Any]) -> float | int | str | None:
    value = result["observed_value"] if "observed_value" in result else result.get("unexpected_count")
    return value if isinstance(value, (int, float, str)) or value is None else str(value)


def _cube_outcomes(cube: str, suite: gx.ExpectationSuite, result: Any) -> list[GateOutcome]:
    by_id = _by_expectation(suite, result)
    out = []
    for e in suite.expectations:
        r = by_id[e.id]
        error = errored(r.exception_info)
        out.append(
            GateOutcome(
                cube=cube,
                expectation=type(e).__name__,
                success=bool(r.success) and error is None,
                blocking=e.severity == FailureSeverity.CRITICAL,
                error=error,
                observed=None if error else _observed(r.result),
                threshold=str((e.meta or {}).get("threshold", "")),
            )
        )
    return out


def _measures_table(measures: pd.DataFrame) -> pd.DataFrame:
    table = measures if CUBE_COLUMN in measures.columns else measures.rename_axis(CUBE_COLUMN).reset_index()
    return table.assign(**{CUBE_COLUMN: table[CUBE_COLUMN].astype(str)})


def _measure_outcomes(
    cubes: list[str], table: pd.DataFrame, suite: gx.ExpectationSuite, result: Any
) -> list[GateOutcome]:
    by_id = _by_expectation(suite, result)
    rows = table.set_index(CUBE_COLUMN)
    names = list(dict.fromkeys([*cubes, *rows.index.tolist()]))
    out = []
    for e in suite.expectations:
        r = by_id[e.id]
        column = e.column  # type: ignore[attr-defined]
        error = errored(r.exception_info)
        failing = {str(row[CUBE_COLUMN]) for row in r.result.get("unexpected_index_list") or []}
        if error is None and len(failing) != int(r.result.get("unexpected_count") or 0):
            error = f"GX listed {len(failing)} failing cubes for {r.result.get('unexpected_count')} failures"
        for cube in names:
            cube_error = error
            if cube_error is None and cube not in rows.index:
                cube_error = "the cube has no row in the measures table"
            value = rows.at[cube, column] if cube_error is None else None
            observed = None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
            out.append(
                GateOutcome(
                    cube=cube,
                    expectation=type(e).__name__ + f"[{column}]",
                    success=cube_error is None and cube not in failing,
                    blocking=e.severity == FailureSeverity.CRITICAL,
                    error=cube_error,
                    observed=observed,
                    threshold=str((e.meta or {}).get("threshold", "")),
                )
            )
    return out


def _agree(outcomes: list[GateOutcome], results: Mapping[str, CubeGateResult], check_of: Mapping[str, str]) -> None:
    """Raise unless every GX verdict that did not error is the core's verdict on the same cube."""
    for o in outcomes:
        result = results.get(o.cube)
        core = result.check(check_of[o.expectation]) if result is not None and o.error is None else None
        if core is not None and (core.passed, core.blocking) != (o.success, o.blocking):
            raise InternalError(
                f"cube {o.cube!r}: {o.expectation} says success={o.success}, blocking={o.blocking}, but the core "
                f"gates say {core.passed}, {core.blocking} on the same facts; this is a bug in cubeguard"
            )


def _row(table: pd.DataFrame, cube: str) -> dict[str, float]:
    if cube not in table.index:
        return {}
    return {str(k): float(v) for k, v in table.loc[cube].items() if pd.api.types.is_number(v)}


def run_gates(
    cubes: Mapping[str, tuple[xr.Dataset, xr.Dataset]],
    measures: pd.DataFrame,
    gates: GateSpec,
    docs_dir: Path | None,
    *,
    scope: str = "interior",
    run_name: str = "gates",
    chunk_cells: int = DEFAULT_SLAB_CELLS,
    additive: frozenset[str] = frozenset(),
) -> GateReport:
    """Run the release gates.

    Args:
        cubes: ``{cube id: (original, protected)}``; cubes may be lazy (read slab by slab).
        measures: the per-cube measures table of :func:`cubeguard.measures.table.measure_cubes`
            (index or column ``cube``), with the ``hellinger@<scope>`` and
            ``average_absolute_distance@<scope>`` columns the distance gates need.
        gates: the release's thresholds.
        docs_dir: where Data Docs go (created if needed); None for none.
        scope: the measures' scope the distance gates read (``"interior"``, ``"cube"``, a margin label).
        run_name: the run's name in the Data Docs.
        chunk_cells: about how many cells of a cube to read at once.
        additive: cubes whose protection promises additive tables (controlled rounding, small cell
            adjustment, ...): additivity blocks on them as if ``gates.require_additivity`` were set.

    Returns:
        The frozen report; ``report.passed`` is False if a blocking expectation failed or any errored.

    Raises:
        cubeguard.gates.slabs.GateInputError: if a cube has no ``count``, a count is missing, or the
            original has other cells.
        cubeguard.measures.errors.InvalidCubeError: if a cube breaks the cube convention.
        InternalError: if a suite does not hold or report every expectation it was built with, or GX
            and the core disagree on a verdict.
    """
    if docs_dir is not None:
        docs_dir.mkdir(parents=True, exist_ok=True)
    context = ephemeral_context(docs_dir)
    suites = _add_suites(context, gates, scope)
    strict = gates.model_copy(update={"require_additivity": True})
    if additive and not gates.require_additivity:
        suites[ADDITIVE_SUITE] = context.suites.add(
            gx.ExpectationSuite(name=ADDITIVE_SUITE, expectations=cube_expectations(strict))
        )
    suite_of = {
        c: ADDITIVE_SUITE if c in additive and ADDITIVE_SUITE in suites else CUBE_SUITE for c in map(str, cubes)
    }
    batch = (
        context.data_sources.add_pandas(SOURCE)
        .add_dataframe_asset("cubes")
        .add_batch_definition_whole_dataframe("whole")
    )
    run_id = RunIdentifier(run_name=run_name)
    table = _measures_table(measures)
    by_cube = table.drop_duplicates(CUBE_COLUMN).set_index(CUBE_COLUMN)
    check_of = {
        **_CHECK_OF,
        **{f"ExpectDistanceWithinBound[{measure_column(m, scope)}]": c for c, m in DISTANCES},
        f"ExpectSmallCellsRecoveredByAttackAtMost[{RECOVERED_COLUMN}]": "max_recovered_by_attack",
        f"ExpectAttackSelfTestToMissNothing[{MISSED_COLUMN}]": "attack_self_test",
    }
    outcomes: list[GateOutcome] = []
    facts: dict[str, CubeGateResult] = {}

    def facts_of(item: tuple[object, tuple[xr.Dataset, xr.Dataset]]) -> CubeGateResult:
        cube, (original, protected) = str(item[0]), item[1]
        row = _row(by_cube, cube)
        spec = strict if suite_of[cube] == ADDITIVE_SUITE else gates
        return evaluate_cube(
            original, protected, row, spec, cube=cube, additivity=True, scope=scope, slab_cells=chunk_cells
        )

    # One thread reads and checks the next cube (numpy, numba and Zarr release the GIL) while GX
    # validates this one; results come back in cube order, at most two cubes in memory.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = iter(cubes.items())
        ahead = [pool.submit(facts_of, item) for item in islice(pending, 1)]
        while ahead:
            found = ahead.pop().result()
            ahead.extend(pool.submit(facts_of, item) for item in islice(pending, 1))
            facts[found.cube] = found
            suite = suites[suite_of[found.cube]]
            result = _validate(context, batch, found.cube, suite, cube_frame(found), run_id)
            outcomes.extend(_cube_outcomes(found.cube, suite, result))
    if suites[MEASURES_SUITE].expectations:
        result = _validate(context, batch, MEASURES_ASSET, suites[MEASURES_SUITE], table, run_id, dict(_COMPLETE))
        outcomes.extend(_measure_outcomes([str(c) for c in cubes], table, suites[MEASURES_SUITE], result))
    _agree(outcomes, facts, check_of)
    docs_index = None
    if docs_dir is not None:
        build_docs(context, docs_dir)
        make_offline(docs_dir)
        docs_index = docs_dir / "index.html"
    lengths = tuple((name, len(suite.expectations)) for name, suite in suites.items())
    return GateReport(tuple(outcomes), lengths, docs_index)
