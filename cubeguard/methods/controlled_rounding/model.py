"""The config model of controlled rounding."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cubeguard.methods.base import CubeStep, base_field

StopRule = Literal["optimal", "first_feasible", "time_limit"]


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
        description="Public: every published count is a multiple of the base less than steps bases from its count. "
        "1 is zero-restricted rounding (the two adjacent multiples); raise it when a cube has no zero-restricted "
        "solution (the Handbook's K steps, 5.5.1, is steps K + 1).",
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
