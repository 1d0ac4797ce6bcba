"""Small-cells gate: few original small cells may be published unchanged.

Shlomo (2009), section 4.1: the disclosure risk left in a frequency table is measured by the small
cells (original 1s and 2s) that the protection did not change. The share is
:func:`cubeguard.measures.risk.small_cells_unchanged`, taken here over every cell of the cube
(totals and subtotals included: a small subtotal discloses as much as a small interior cell).

The metric ``cube.small_cells_unchanged`` and :class:`ExpectSmallCellsChangedShare` wrap it for
Great Expectations.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from great_expectations.compatibility import pydantic
from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.execution_engine import PandasExecutionEngine
from great_expectations.expectations.expectation import BatchExpectation
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider
from great_expectations.render import LegacyDiagnosticRendererType
from great_expectations.render.renderer.renderer import renderer

from cubeguard.measures.risk import small_cells_unchanged
from expectations.flatten import ORIGINAL, PUBLISHED

DEFAULT_SMALL_VALUES = (1, 2)


class CubeSmallCellsUnchanged(TableMetricProvider):
    """Metric ``cube.small_cells_unchanged``: small cells, unchanged ones, and their share (None if none)."""

    metric_name = "cube.small_cells_unchanged"
    value_keys = ("original_column", "published_column", "small_values")

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
        o = frame[metric_value_kwargs["original_column"]].to_numpy(dtype=np.int64)
        p = frame[metric_value_kwargs["published_column"]].to_numpy(dtype=np.int64)
        small = [int(v) for v in metric_value_kwargs["small_values"]]
        share = small_cells_unchanged(o, p, small)
        n = int(np.isin(o, small).sum())
        return {
            "small_cells": n,
            "unchanged": round(share * n) if n else 0,
            "share": None if math.isnan(share) else share,
        }


class ExpectSmallCellsChangedShare(BatchExpectation):
    """Expect at most ``max_unchanged_share`` of the original small cells to be published unchanged.

    Observed value: the share (None, and success, when the cube has no small cell). ``details``
    holds the counts.
    """

    max_unchanged_share: float = pydantic.Field(ge=0, le=1)
    small_values: list[int] = pydantic.Field(default_factory=lambda: list(DEFAULT_SMALL_VALUES))
    original_column: str = ORIGINAL
    published_column: str = PUBLISHED
    description: str | None = None

    metric_dependencies: ClassVar[tuple[str, ...]] = ("cube.small_cells_unchanged",)
    success_keys: ClassVar[tuple[str, ...]] = (
        "max_unchanged_share",
        "small_values",
        "original_column",
        "published_column",
    )

    @pydantic.root_validator(skip_on_failure=True)
    def _describe(cls, values: dict[str, Any]) -> dict[str, Any]:
        if not values.get("description"):
            small = ", ".join(str(v) for v in values["small_values"])
            values["description"] = (
                f"Small cells: at most {values['max_unchanged_share']:.1%} of the cells with an original "
                f"value in {{{small}}} are published unchanged (Shlomo 2009, 4.1)."
            )
        return values

    def _validate(
        self,
        metrics: dict[str, Any],
        runtime_configuration: dict[str, Any] | None = None,
        execution_engine: Any = None,
    ) -> dict[str, Any]:
        found = metrics["cube.small_cells_unchanged"]
        share = found["share"]
        return {
            "success": share is None or share <= self.max_unchanged_share,
            "result": {"observed_value": share, "details": found},
        }

    @classmethod
    @renderer(renderer_type=LegacyDiagnosticRendererType.OBSERVED_VALUE)
    def _diagnostic_observed_value_renderer(
        cls, configuration: Any = None, result: Any = None, runtime_configuration: Any = None
    ) -> str:
        """Data Docs' observed value: the share, with the counts behind it."""
        details = (getattr(result, "result", None) or {}).get("details")
        if not details:
            return "--"
        if not details["small_cells"]:
            return "no small cells"
        return f"{details['share']:.1%} ({details['unchanged']} of {details['small_cells']} small cells unchanged)"
