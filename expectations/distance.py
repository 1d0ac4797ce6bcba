"""Distance gate: the information loss of each cube stays within a bound.

Checked on the per-cube measures table of :func:`cubeguard.measures.table.measure_cubes` (one row
per cube; columns ``<measure>@<scope>``): e.g. the Hellinger distance (Shlomo 2009, 4.2; Handbook
on SDC v2, 5.8) or the mean absolute deviation per cell (``average_absolute_distance``). The
expectation is GX's ``ExpectColumnValuesToBeBetween`` with a business name, an upper bound only and
a Data Docs description; a cube whose measure is undefined (NaN, e.g. an empty cube) is not a
violation.
"""

from __future__ import annotations

from typing import Any

from great_expectations.compatibility import pydantic
from great_expectations.expectations import ExpectColumnValuesToBeBetween

CUBE_COLUMN = "cube"


class ExpectDistanceWithinBound(ExpectColumnValuesToBeBetween):
    """Expect every cube's distance measure (a column of the measures table) to be at most ``max_value``.

    Failing cubes come back in the result's ``unexpected_index_list`` (keyed by the ``cube`` column).
    """

    description: str | None = None
    result_format: dict[str, Any] = pydantic.Field(
        default_factory=lambda: {"result_format": "COMPLETE", "unexpected_index_column_names": [CUBE_COLUMN]}
    )

    @pydantic.root_validator(skip_on_failure=True)
    def _describe(cls, values: dict[str, Any]) -> dict[str, Any]:
        if values.get("max_value") is None:
            raise ValueError("give max_value, the bound the distance must not exceed")
        if not values.get("description"):
            values["description"] = (
                f"Information loss: {values['column']} is at most {values['max_value']:g} in every cube."
            )
        return values
