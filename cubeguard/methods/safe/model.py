"""The config model of SAFE: the only model of its parameters."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PrivateAttr, model_validator

from cubeguard.cubes.spec import Frozen
from cubeguard.methods.context import TableSet
from cubeguard.methods.models import MicrodataStep


class Bounds(Frozen):
    """A pair of deviation bounds ``b``: for one-dimensional cells and for the other cells."""

    one: int = Field(ge=0, le=1000, strict=True, description="Bound for cells of one variable.")
    other: int = Field(ge=0, le=1000, strict=True, description="Bound for cells crossing two or more variables.")


class SafeStep(MicrodataStep):
    """SAFE (Höhne 2011): pre-tabular microaggregation so that no table of the microdata holds a 1 or a 2.

    A pre-tabular step. The microdata, taken at the finest categories the release's breakdowns
    publish, form an elementary table; SAFE moves records between its cells until every cell holds
    no record or at least 3 (model 1), keeping each cell of the controlled ``tables`` less than
    ``w_i + b`` from its original count (strictly, equations 2 and 3), where ``w_i = int(log10(a_i))`` (equation 4): first a
    feasible solution from the ``start`` bounds, raising both by one when the search stalls (model
    2), then tightening the weights (``correction_steps``, Table 2) and the bounds towards
    ``target`` (model 3) until a tightening cannot be repaired, ``max_tightenings`` were tried or
    ``time_limit`` is reached (the only stop that depends on the machine's speed). Moved
    records keep their ids and record keys. Household columns (``input.household_columns``) are never
    changed, so every household stays whole (one region, one size): SAFE moves person attributes. Every cube of the release is then tabulated from the
    result, so every table, planned or not, is additive and free of 1s and 2s.
    """

    method: Literal["safe"] = "safe"
    name: str = "safe"
    tables: list[list[str]] | None = Field(
        default=None,
        description="Controlled tables, each a list of breakdown ids; default: every hypercube of the release "
        "(each cell of a table, totals and subtotals too, is a controlled cell).",
    )
    start: Bounds = Field(
        default=Bounds(one=3, other=5), description="Bounds of the first feasible solution (the paper's 3 and 5)."
    )
    target: Bounds = Field(default=Bounds(one=1, other=1), description="Bounds at which tightening stops.")
    correction_steps: int = Field(
        default=8, ge=0, le=18, strict=True, description="Weight-correction steps of model 3 (Table 2; 0 keeps w)."
    )
    window: int = Field(
        default=4,
        ge=1,
        le=64,
        strict=True,
        description="Candidate cells per variable on each side of a cell in that variable's sort order.",
    )
    time_limit: float | None = Field(
        default=600.0,
        gt=0,
        le=86400,
        description="Seconds the optimisation (model 3) may take; model 2 always finishes. A release that stops "
        "on it depends on the machine's speed, so 'audit reproduce' may not rebuild it bit for bit (its report's "
        "'stopped_by' says so); null: no limit. For a bounded run that is the same on every machine, use "
        "max_tightenings.",
    )
    max_tightenings: int | None = Field(
        default=None,
        ge=0,
        le=100_000,
        strict=True,
        description="Most tightenings model 3 tries (each weight-correction step or bound lowered counts once, "
        "kept or undone): a stop that gives the same microdata on every machine; null: until the target.",
    )
    _tables: TableSet | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _target_below_start(self) -> SafeStep:
        if self.target.one > self.start.one or self.target.other > self.start.other:
            raise ValueError("target bounds must not exceed the start bounds")
        return self

    def with_tables(self, tables: TableSet) -> SafeStep:
        """This step with the release's tables, which it controls."""
        bound = self.model_copy()
        bound._tables = tables
        return bound

    @property
    def release_tables(self) -> TableSet | None:
        """The release's tables once told (:meth:`with_tables`), else ``None``."""
        return self._tables
