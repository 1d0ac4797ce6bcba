"""Small-cells gate: few original small cells may be published unchanged.

Shlomo (2009), section 4.1: the disclosure risk left in a frequency table is measured by the small
cells (original 1s and 2s) that the protection did not change. The batch holds one row per small
value with its cells and the unchanged ones (:mod:`cubeguard.gates.small_cells`, over every cell of
the cube, totals included; :mod:`expectations.facts`); the metric ``cube.small_cells_unchanged``
takes the share over the values it is told are small, and :class:`ExpectSmallCellsUnchangedShareToBeAtMost`
judges it with the core's verdict (:func:`cubeguard.gates.small_cells.passes`).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from great_expectations.compatibility import pydantic
from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.execution_engine import PandasExecutionEngine
from great_expectations.expectations.expectation import BatchExpectation
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider
from great_expectations.render import LegacyDiagnosticRendererType
from great_expectations.render.renderer.renderer import renderer

from cubeguard.gates import small_cells
from expectations.facts import ORIGINAL, SMALL_CELLS, rows

DEFAULT_SMALL_VALUES = small_cells.SMALL_VALUES


class CubeSmallCellsUnchanged(TableMetricProvider):
    """Metric ``cube.small_cells_unchanged``: small cells, unchanged ones, and their share (None if none).

    Raises ``ValueError`` (the expectation errors) if a small value has no row or more unchanged
    cells than cells.
    """

    metric_name = "cube.small_cells_unchanged"
    value_keys = ("small_values",)

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
        small = [int(v) for v in metric_value_kwargs["small_values"]]
        table = rows(frame, SMALL_CELLS)
        table = table[table[ORIGINAL].isin(small)]
        missing = sorted(set(small) - {int(v) for v in table[ORIGINAL]})
        if missing:
            raise ValueError(f"the batch has no small-cell counts for the value(s) {missing}")
        if (table["unchanged"] > table["cells"]).any():
            raise ValueError("a small value has more unchanged cells than cells")
        n, unchanged = int(table["cells"].sum()), int(table["unchanged"].sum())
        share = small_cells.unchanged_share(n, unchanged)
        return {"small_cells": n, "unchanged": unchanged, "share": None if math.isnan(share) else share}


class ExpectSmallCellsUnchangedShareToBeAtMost(BatchExpectation):
    """Expect at most ``max_unchanged_share`` of the original small cells to be published unchanged.

    Observed value: the share (None, and success, when the cube has no small cell). ``details``
    holds the counts.
    """

    max_unchanged_share: float = pydantic.Field(ge=0, le=1)
    small_values: list[int] = pydantic.Field(default_factory=lambda: list(DEFAULT_SMALL_VALUES))
    description: str | None = None

    metric_dependencies: ClassVar[tuple[str, ...]] = ("cube.small_cells_unchanged",)
    success_keys: ClassVar[tuple[str, ...]] = ("max_unchanged_share", "small_values")

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
            "success": small_cells.passes(share, self.max_unchanged_share),
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
