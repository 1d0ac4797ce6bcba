"""Additivity gate: every total and subtotal equals the sum of its children, along every dimension.

The facts come from :mod:`cubeguard.gates.additivity` (Handbook on SDC v2 (Hundepool et al. 2024),
5.4) as one row per dimension and code with children along it (:mod:`expectations.facts`). The
metric ``cube.additivity`` adds up the non-additive cells and the cells checked, and checks the rows
against each other: a group reported additive must have equal sums of parent and children cells, and
no group may report more violations than cells; facts that contradict themselves make the
expectation error (which fails the gate). :class:`ExpectTotalsEqualSumOfChildren` judges the count
with the core's verdict (:func:`cubeguard.gates.additivity.passes`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from great_expectations.compatibility import pydantic
from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.execution_engine import PandasExecutionEngine
from great_expectations.expectations.expectation import BatchExpectation
from great_expectations.expectations.metadata_types import FailureSeverity
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider
from great_expectations.render import LegacyDiagnosticRendererType
from great_expectations.render.renderer.renderer import renderer

from cubeguard.gates import additivity
from expectations.facts import ADDITIVITY, EXAMPLE_SEPARATOR, PUBLISHED, rows


def additivity_summary(groups: Any) -> dict[str, Any]:
    """Violations, cells checked, largest gap and examples from the additivity rows; raise if they disagree.

    Raises:
        ValueError: if a group reported additive has unequal sums, or counts more violations than cells.
    """
    unequal = groups[(groups["non_additive"] == 0) & (groups["parent_total"] != groups["children_total"])]
    if len(unequal):
        first = unequal.iloc[0]
        raise ValueError(
            f"{len(unequal)} group(s) reported additive have unequal sums, e.g. {first['dimension']}={first['parent']}: "
            f"{first['parent_total']} != {first['children_total']}"
        )
    if ((groups["new_non_additive"] > groups["non_additive"]) | (groups["non_additive"] > groups["cells"])).any():
        raise ValueError("a group reports more non-additive cells than it has")
    examples = [e for text in groups["examples"].fillna("") if text for e in text.split(EXAMPLE_SEPARATOR)]
    return {
        "checked": int(groups["new_cells"].sum()),
        "violations": int(groups["new_non_additive"].sum()),
        "max_gap": int(groups["max_gap"].max()) if len(groups) else 0,
        "examples": examples[: additivity.MAX_EXAMPLES],
    }


class CubeAdditivity(TableMetricProvider):
    """Metric ``cube.additivity``: :func:`additivity_summary` of the batch's additivity rows."""

    metric_name = "cube.additivity"
    value_keys = ("column",)

    @metric_value(engine=PandasExecutionEngine)
    def _pandas(
        cls,
        execution_engine: PandasExecutionEngine,
        metric_domain_kwargs: dict[str, Any],
        metric_value_kwargs: dict[str, Any],
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any],
    ) -> dict[str, Any]:
        frame, _, _ = execution_engine.get_compute_domain(metric_domain_kwargs, domain_type=MetricDomainTypes.TABLE)
        return additivity_summary(rows(frame, ADDITIVITY))


class ExpectTotalsEqualSumOfChildren(BatchExpectation):
    """Expect every total and subtotal of a published cube to equal the sum of its children.

    Checked along every dimension of the cube. The observed value is the number of total/subtotal
    cells that break additivity; the result's ``details`` hold the cells checked, the largest gap
    and a few example cells.
    """

    column: str = PUBLISHED
    description: str | None = None

    metric_dependencies: ClassVar[tuple[str, ...]] = ("cube.additivity",)
    success_keys: ClassVar[tuple[str, ...]] = ("column",)

    @pydantic.root_validator(skip_on_failure=True)
    def _describe(cls, values: dict[str, Any]) -> dict[str, Any]:
        if not values.get("description"):
            reported = values.get("severity") != FailureSeverity.CRITICAL
            values["description"] = (
                f"Additivity: every total and subtotal of {values['column']} equals the sum of its "
                "children, along every dimension of the cube"
                + (" (reported only: this release does not promise additive tables)." if reported else ".")
            )
        return values

    def _validate(
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        found = metrics["cube.additivity"]
        return {
            "success": additivity.passes(found["violations"]),
            "result": {"observed_value": found["violations"], "details": found},
        }

    @classmethod
    @renderer(renderer_type=LegacyDiagnosticRendererType.OBSERVED_VALUE)
    def _diagnostic_observed_value_renderer(
        cls, configuration: Any = None, result: Any = None, runtime_configuration: Any = None
    ) -> str:
        """Data Docs' observed value: violations out of the cells checked, the largest gap and an example."""
        details = (getattr(result, "result", None) or {}).get("details")
        if not details:
            return "--"
        text = (
            f"{details['violations']} of {details['checked']} totals/subtotals off (largest gap {details['max_gap']})"
        )
        return text + (f"; e.g. {details['examples'][0]}" if details["examples"] else "")
