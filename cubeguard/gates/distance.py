"""Distance bounds: the information loss of each cube stays within a bound.

Read from the cube's row of the measures table (:func:`cubeguard.measures.table.measure_cubes`,
columns ``<measure>@<scope>``): the Hellinger distance (Shlomo (2009), section 4.2; Handbook on SDC v2
(Hundepool et al. 2024), 5.8) and the mean absolute deviation per cell (``average_absolute_distance``).
An undefined value (NaN, e.g. a cube without interior cells) passes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

HELLINGER = "hellinger"
MEAN_ABSOLUTE_DEVIATION = "average_absolute_distance"
SCOPE = "interior"


def measure_column(measure: str, scope: str = SCOPE) -> str:
    """The measures-table column of ``measure`` on ``scope``."""
    return f"{measure}@{scope}"


@dataclass(frozen=True)
class DistanceFacts:
    """One distance measure of one cube against its bound.

    Attributes:
        column: the measures-table column read.
        value: its value (NaN when undefined or missing from the row).
        bound: the largest value allowed.
    """

    column: str
    value: float
    bound: float

    @property
    def passed(self) -> bool:
        """The verdict on this cube."""
        return passes(self.value, self.bound)


def passes(value: float | None, bound: float) -> bool:
    """The distance verdict: at most ``bound``; an undefined value passes."""
    return value is None or math.isnan(value) or value <= bound


def check_distance(row: Mapping[str, float], measure: str, bound: float, scope: str = SCOPE) -> DistanceFacts:
    """Read ``measure@scope`` from a cube's measures row and hold it against ``bound``.

    Examples:
        >>> check_distance({"hellinger@interior": 0.2}, "hellinger", 0.1).passed
        False
    """
    column = measure_column(measure, scope)
    value = row.get(column, math.nan)
    return DistanceFacts(column, math.nan if value is None else float(value), float(bound))
