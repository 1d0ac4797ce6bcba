"""Forbidden-values gate: no published count takes a value the release promises never to publish.

A p-table with ``js > 0`` (cell key method, Handbook on SDC v2 (Hundepool et al. 2024), 5.4) never
publishes the counts ``1..js``; a release that promises "no published 1s and 2s" lists them in
``GateSpec.forbidden_values``. The batch is the distribution of a cube's published values (one row
per distinct value up to the largest forbidden one with its number of cells, and one row for the cells
above, :mod:`expectations.facts`); the metric
``cube.forbidden_cells`` counts the cells whose value is in the set and
:class:`ExpectPublishedCountsOutsideForbiddenSet` judges the count with the core's verdict
(:func:`cubeguard.gates.forbidden.passes`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from great_expectations.compatibility import pydantic
from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.execution_engine import PandasExecutionEngine
from great_expectations.expectations.expectation import BatchExpectation
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider
from great_expectations.render import LegacyDiagnosticRendererType
from great_expectations.render.renderer.renderer import renderer

from cubeguard.gates import forbidden
from expectations.facts import PUBLISHED, PUBLISHED_VALUES, rows


class CubeForbiddenCells(TableMetricProvider):
    """Metric ``cube.forbidden_cells``: cells with a value in ``value_set``, and which values they take.

    Raises ``ValueError`` (the expectation errors) if a value appears twice, a count is not positive,
    or the row summing up the larger values could hold a forbidden one.
    """

    metric_name = "cube.forbidden_cells"
    value_keys = ("column", "value_set")

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
        table = rows(frame, PUBLISHED_VALUES)
        column = metric_value_kwargs["column"]
        forbidden_set = [int(v) for v in metric_value_kwargs["value_set"]]
        if table[column].duplicated().any() or (table["cells"] < 1).any():
            raise ValueError("the published-value distribution lists a value twice or a value without cells")
        above = table[table["above"].fillna(False).astype(bool)]
        if len(above) > 1 or (len(above) and int(above[column].iloc[0]) <= max(forbidden_set)):
            raise ValueError("the published values summed up above the forbidden ones may hide a forbidden value")
        values = table[~table["above"].fillna(False).astype(bool)]
        hit = values[values[column].isin(forbidden_set)]
        return {
            "cells": forbidden.forbidden_cells(hit[column], hit["cells"], metric_value_kwargs["value_set"]),
            "found": {str(int(v)): int(c) for v, c in zip(hit[column], hit["cells"], strict=True)},
            "cells_above": int(above["cells"].sum()),
        }


class ExpectPublishedCountsOutsideForbiddenSet(BatchExpectation):
    """Expect no published count to lie in the forbidden set (e.g. no published 1s and 2s).

    The observed value is the number of offending cells; ``details`` give the forbidden values found
    with their cells.
    """

    value_set: list[int]
    column: str = PUBLISHED
    description: str | None = None

    metric_dependencies: ClassVar[tuple[str, ...]] = ("cube.forbidden_cells",)
    success_keys: ClassVar[tuple[str, ...]] = ("column", "value_set")

    @pydantic.root_validator(skip_on_failure=True)
    def _describe(cls, values: dict[str, Any]) -> dict[str, Any]:
        if not values.get("description"):
            shown = ", ".join(str(v) for v in values["value_set"])
            values["description"] = (
                f"Forbidden values: no {values['column']} count is in {{{shown}}}, as the release promises."
            )
        return values

    def _validate(
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        found = metrics["cube.forbidden_cells"]
        return {
            "success": forbidden.passes(found["cells"]),
            "result": {"observed_value": found["cells"], "details": found},
        }

    @classmethod
    @renderer(renderer_type=LegacyDiagnosticRendererType.OBSERVED_VALUE)
    def _diagnostic_observed_value_renderer(
        cls, configuration: Any = None, result: Any = None, runtime_configuration: Any = None
    ) -> str:
        """Data Docs' observed value: the offending cells, by value."""
        details = (getattr(result, "result", None) or {}).get("details")
        if not details:
            return "--"
        by_value = ", ".join(f"{c} cells of {v}" for v, c in details["found"].items())
        return f"{details['cells']} cells" + (f" ({by_value})" if by_value else "")
