"""The config model of controlled rounding."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cubeguard.methods.fields import base_field
from cubeguard.methods.models import CubeStep

StopRule = Literal["optimal", "first_feasible", "time_limit"]
Fallback = Literal["none", "rapid"]


class ControlledRoundingStep(CubeStep):
    """Controlled rounding (Hundepool et al. 2024, Handbook on SDC v2, 5.5 and 5.5.1): an additive table of multiples of ``base``.

    Every cell, totals and subtotals included, is published as a multiple of ``base`` less than
    ``steps`` bases from its count, and every total and subtotal is the sum of the published
    interior cells below it; among such tables the one with the least sum of absolute deviations
    over all cells is chosen (Salazar-González, Bycroft and Staggemeier 2005, the CRP of tau-ARGUS).
    ``steps: 1`` is zero-restricted rounding: a multiple of the base stays, any other count goes
    to one of its two adjacent multiples. The Handbook counts steps beyond that, so its K steps
    (5.5.1) is ``steps: K + 1`` here; a user who knows ``base`` and ``steps`` knows every count
    lies within ``steps * base - 1`` of its published value (5.5.1.2). The solution is
    deterministic for a given cube unless ``stop: time_limit`` is reached before optimality.
    A cube may be rounded by one such step, and no later step may change it.
    """

    method: Literal["controlled_rounding"]
    name: str = "controlled_rounding"
    base: int = base_field(
        2,
        "Rounding base (public): every published count is a multiple of it (Handbook on SDC v2, 5.5); "
        "3 and 5 are the common choices.",
    )
    steps: int = Field(
        default=1,
        ge=1,
        le=100,
        strict=True,
        description="Public: the most steps allowed; every published count is a multiple of the base less than k bases "
        "from its count, for the least k up to steps that admits an additive table (reported as steps_used). "
        "1 is zero-restricted rounding (the two adjacent multiples); a table with a hierarchy on three or more "
        "variables may have none, then raise it to 2 (the Handbook's K steps, 5.5.1, is steps K + 1).",
    )
    stop: StopRule = Field(
        default="optimal",
        description="When the solver stops (Handbook on SDC v2, 5.5.1.1): 'optimal' (proven least total deviation; "
        "an error if not proven within time_limit_s), 'first_feasible' (the first additive rounding found) or "
        "'time_limit' (the best found within time_limit_s; then the output depends on the machine's speed).",
    )
    time_limit_s: float = Field(
        default=60.0,
        gt=0,
        le=86_400,
        description="Seconds the solver may spend on one cube.",
    )
    partition_above_cells: int = Field(
        default=20_000,
        ge=0,
        le=1_000_000_000,
        strict=True,
        description="A cube with more cells (totals included) is rounded block by block (Handbook on SDC v2, 5.5.1, "
        "'Very large tables'): along the variable with the most codes, its total first, then each code with its "
        "children, the code held at its published value. Additive, but not proven optimal as a whole.",
    )
    block_cells: int = Field(
        default=1_000,
        ge=10,
        le=10_000_000,
        strict=True,
        description="Most free cells of one block of a partitioned cube; a larger block is split along another "
        "variable. Larger blocks deviate less but take far longer.",
    )
    hold: list[list[str]] = Field(
        default_factory=list,
        description="Groups of breakdown ids (e.g. [[GEO.2, SEX]]) whose margin tables every cube rounds first, the "
        "same way in every cube, and then holds: a cell shared by several cubes (the other variables at their "
        "totals) is published with the same value in all of them. Needs the same codes for a breakdown in every cube.",
    )
    fallback: Fallback = Field(
        default="none",
        description="What a cube gets when no rounding is found within steps and time_limit_s: 'none' (the release "
        "stops and says what to raise) or 'rapid' (Handbook on SDC v2, 5.5.1.1: interior cells to the nearest "
        "multiple, every total their sum; additive, but a total may move several bases; not with hold).",
    )
