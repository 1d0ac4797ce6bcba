"""Additivity gate: every total and subtotal equals the sum of its children, along every dimension.

A cube holds its margins in pre-order along each dimension (``cubeguard.cubes.model``), so a
published table is additive when, for every dimension and every code with children along it, the
cell equals the sum of its children's cells with the other coordinates fixed (Handbook on SDC v2,
5.4: the cell key method gives up additivity, controlled rounding keeps it). Releases that promise
additive tables require it; others report it.

:func:`check_additivity` does the work on a flat table (:mod:`expectations.flatten`); the metric
``cube.additivity`` and the batch expectation :class:`ExpectTotalsEqualSumOfChildren` wrap it for
Great Expectations (STACK.md: a custom metric plus a batch expectation works on pandas data).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pandas as pd
from great_expectations.compatibility import pydantic
from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.execution_engine import PandasExecutionEngine
from great_expectations.expectations.expectation import BatchExpectation
from great_expectations.expectations.metadata_types import FailureSeverity
from great_expectations.expectations.metrics.metric_provider import metric_value
from great_expectations.expectations.metrics.table_metric_provider import TableMetricProvider
from great_expectations.render import LegacyDiagnosticRendererType
from great_expectations.render.renderer.renderer import renderer

from expectations.flatten import PARENT_SUFFIX, PUBLISHED

MAX_EXAMPLES = 5


@dataclass(frozen=True)
class AdditivityCheck:
    """Outcome of :func:`check_additivity`.

    Attributes:
        checked: cells that have children along at least one dimension (totals and subtotals).
        violations: those of them that differ from the sum of their children along some dimension.
        max_gap: the largest ``|cell - sum of children|`` found (0 when additive).
        examples: up to :data:`MAX_EXAMPLES` violations, one readable line each.
    """

    checked: int
    violations: int
    max_gap: int
    examples: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form (the metric's value)."""
        return {
            "checked": self.checked,
            "violations": self.violations,
            "max_gap": self.max_gap,
            "examples": list(self.examples),
        }


def cube_dims(frame: pd.DataFrame) -> list[str]:
    """The dimension columns of a flat table: those with a ``<dim>.parent`` helper column."""
    return [str(c) for c in frame.columns if f"{c}{PARENT_SUFFIX}" in frame.columns]


def _positions_and_parents(
    frame: pd.DataFrame, dim: str
) -> tuple[npt.NDArray[np.intp], list[str], npt.NDArray[np.intp]]:
    """Per row the position along ``dim``; the codes; per code the position of its parent (-1: none)."""
    col = frame[dim]
    cat = col.cat if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category").cat
    pos = np.asarray(cat.codes, dtype=np.intp)
    if (pos < 0).any():
        raise ValueError(f"column {dim!r} has missing codes; every row must name a cell")
    codes = [str(c) for c in cat.categories]
    some_row = np.zeros(len(codes), dtype=np.intp)
    some_row[pos] = np.arange(pos.size, dtype=np.intp)
    present = np.zeros(len(codes), dtype=bool)
    present[pos] = True
    parents = frame[f"{dim}{PARENT_SUFFIX}"].iloc[some_row].astype(object).to_numpy()
    parent_pos = pd.Index(codes).get_indexer([str(p) for p in parents]).astype(np.intp)
    parent_pos[~present] = -1
    return pos, codes, parent_pos


def _dense(
    values: npt.NDArray[np.int64], positions: list[npt.NDArray[np.intp]], shape: tuple[int, ...]
) -> npt.NDArray[np.int64]:
    """The cube array from one row per cell; raises ``ValueError`` unless every cell is there once."""
    flat = np.ravel_multi_index(positions, shape)
    size = int(np.prod(shape, dtype=np.int64))
    if flat.size == size and np.array_equal(flat, np.arange(size)):
        return values.reshape(shape)
    seen = np.bincount(flat, minlength=size)
    if flat.size != size or (seen != 1).any():
        missing, repeated = int((seen == 0).sum()), int((seen > 1).sum())
        raise ValueError(f"the table is not a full cube: {missing} cell(s) missing, {repeated} repeated")
    out = np.empty(size, dtype=np.int64)
    out[flat] = values
    return out.reshape(shape)


def check_additivity(frame: pd.DataFrame, column: str = PUBLISHED, dims: list[str] | None = None) -> AdditivityCheck:
    """Check that every total and subtotal of ``column`` equals the sum of its children, per dimension.

    ``dims`` defaults to :func:`cube_dims`. The table must hold every cell of the cube once (in any
    row order). Cost: one pass over the cells per dimension.

    Raises:
        KeyError: if ``column`` or a dimension's helper column is missing.
        ValueError: if the column has missing values or the rows do not form a full cube.

    Examples:
        >>> frame = pd.DataFrame({"S": ["0", "1", "2"], "S.parent": ["", "0", "0"], "published": [5, 2, 4]})
        >>> check_additivity(frame)
        AdditivityCheck(checked=1, violations=1, max_gap=1, examples=('S=0: 5 != 6 = sum of 2 children along S',))
    """
    dims = cube_dims(frame) if dims is None else dims
    if not dims:
        raise ValueError("the table has no dimension columns (each needs a '<dim>.parent' helper column)")
    series = frame[column]
    if series.isna().any():
        raise ValueError(f"column {column!r} has missing values")
    values = series.to_numpy(dtype=np.int64)
    per_dim = [_positions_and_parents(frame, d) for d in dims]
    shape = tuple(len(codes) for _, codes, _ in per_dim)
    cube = _dense(values, [pos for pos, _, _ in per_dim], shape)
    has_children = np.zeros(shape, dtype=bool)
    bad = np.zeros(shape, dtype=bool)
    max_gap = 0
    examples: list[str] = []
    for k, (_, _, parent_pos) in enumerate(per_dim):
        a, hc, b = np.moveaxis(cube, k, 0), np.moveaxis(has_children, k, 0), np.moveaxis(bad, k, 0)
        for p in np.unique(parent_pos[parent_pos >= 0]):
            kids = np.flatnonzero(parent_pos == p)
            gap = a[p] - a[kids].sum(axis=0)
            wrong = gap != 0
            hc[p] = True
            if wrong.any():
                b[p] |= wrong
                max_gap = max(max_gap, int(np.abs(gap).max()))
                if len(examples) < MAX_EXAMPLES:
                    examples.extend(_examples(a, p, kids, wrong, k, dims, per_dim, MAX_EXAMPLES - len(examples)))
    return AdditivityCheck(int(has_children.sum()), int(bad.sum()), max_gap, tuple(examples))


def _examples(
    a: npt.NDArray[np.int64],
    p: int,
    kids: npt.NDArray[np.intp],
    wrong: npt.NDArray[np.bool_],
    k: int,
    dims: list[str],
    per_dim: list[tuple[npt.NDArray[np.intp], list[str], npt.NDArray[np.intp]]],
    limit: int,
) -> list[str]:
    lines = []
    others = [i for i in range(len(dims)) if i != k]
    for idx in np.argwhere(wrong)[:limit]:
        at = dict(zip(others, idx.tolist(), strict=True))
        at[k] = int(p)
        cell = ", ".join(f"{dims[i]}={per_dim[i][1][at[i]]}" for i in range(len(dims)))
        here = tuple(idx.tolist())
        total, parts = int(a[(int(p), *here)]), int(a[(kids, *here)].sum())
        lines.append(f"{cell}: {total} != {parts} = sum of {kids.size} children along {dims[k]}")
    return lines


class CubeAdditivity(TableMetricProvider):
    """Metric ``cube.additivity``: :func:`check_additivity` on the batch, as a dict."""

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
        return check_additivity(frame, metric_value_kwargs["column"]).as_dict()


class ExpectTotalsEqualSumOfChildren(BatchExpectation):
    """Expect every total and subtotal of a published cube to equal the sum of its children.

    Checked along every dimension of the flat table (columns with a ``<dim>.parent`` helper). The
    observed value is the number of total/subtotal cells that break additivity; the result's
    ``details`` hold the cells checked, the largest gap and a few example cells.
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
            "success": found["violations"] == 0,
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
