"""Attack gate: the intruder of ``cubeguard attack`` recovers at most so many small cells of each cube.

Checked on the measures table, whose attack columns the release's attack step fills for every cube
(:mod:`cubeguard.gates.attack`): small original cells recovered with certainty, and small cells the
attacks missed on the unprotected counts (their self-test: an attack that cannot unpick an
unprotected table proves nothing about a protected one). Both are GX's
``ExpectColumnValuesToBeBetween`` with a business name, an upper bound and a Data Docs description.
"""

from __future__ import annotations

from typing import Any

from great_expectations.compatibility import pydantic
from great_expectations.expectations import ExpectColumnValuesToBeBetween

from cubeguard.gates.attack import MISSED_COLUMN, RECOVERED_COLUMN
from expectations.distance import CUBE_COLUMN

_COMPLETE = {"result_format": "COMPLETE", "unexpected_index_column_names": [CUBE_COLUMN]}


class ExpectSmallCellsRecoveredByAttackAtMost(ExpectColumnValuesToBeBetween):
    """Expect every cube to have at most ``max_value`` small original cells recovered with certainty by an attack."""

    column: str = RECOVERED_COLUMN
    description: str | None = None
    result_format: dict[str, Any] = pydantic.Field(default_factory=lambda: dict(_COMPLETE))

    @pydantic.root_validator(skip_on_failure=True)
    def _describe(cls, values: dict[str, Any]) -> dict[str, Any]:
        if values.get("max_value") is None:
            raise ValueError("give max_value, the most small cells an attack may recover")
        if not values.get("description"):
            values["description"] = (
                f"Attacks (feasibility intervals, differencing, linking) recover at most {values['max_value']:g} "
                "small original cells with certainty in every cube."
            )
        return values


class ExpectAttackSelfTestToMissNothing(ExpectColumnValuesToBeBetween):
    """Expect the attacks to recover every small cell of each cube's unprotected counts (their self-test)."""

    column: str = MISSED_COLUMN
    max_value: Any = 0
    description: str | None = (
        "Self-test: run on the unprotected counts, the attacks recover every small cell (else an attack is broken)."
    )
    result_format: dict[str, Any] = pydantic.Field(default_factory=lambda: dict(_COMPLETE))
