"""The rounding measures of each rounded cube as a small table, for the HTML report and the markdown summary.

Hundepool et al. (2024), Handbook on SDC v2, 5.5 and 5.5.1.2: the measures of
:mod:`cubeguard.measures.rounding`, over every cell of a cube whose last protection step rounds to
a public base (columns :data:`~cubeguard.measures.table.ROUNDING_KEYS` of the measures table, scope
``cube``). A cube without such a step has no value in those columns and gets no table.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from cubeguard.measures.rounding import RoundingMeasures
from cubeguard.measures.table import ROUNDING_KEYS

#: The measures-table columns of the rounding measures and of the public base and steps beside them.
COLUMNS = tuple(f"{key}@cube" for key in ROUNDING_KEYS)
MEASURES = RoundingMeasures._fields
_BASE, _STEPS = "rounding_base@cube", "rounding_steps@cube"
EXPLANATION = (
    "Rounding to a public base (Handbook on SDC v2, 5.5 and 5.5.1.2), over every cell of each cube whose last "
    "protection step rounds, totals included: moved_beyond_nearest_share, the share of cells not published as "
    "a nearest multiple of the base; beyond_one_base_share, the share published a whole base or more from "
    "their count; existence_interval_mean_width, the mean width of the interval of counts a user who knows "
    "the base and steps infers from a published value; existence_interval_contains_share, the share of cells "
    "whose count lies in that interval (below 1: published values that mislead such a user). Steps is 1 but "
    "for controlled rounding: its configured (public) steps, what a user reads the cube with."
)


@dataclass(frozen=True)
class RoundedCube:
    """One cube's rounding measures and the public parameters they were read with.

    Attributes:
        cube: the cube id.
        base: the rounding base.
        steps: every count lies less than ``steps * base`` from its published value.
        values: the four measures, indexed by name (a one-column frame, column ``value``).
    """

    cube: str
    base: int
    steps: int
    values: pd.DataFrame


def rounded_cubes(measures: pd.DataFrame) -> list[RoundedCube]:
    """The cubes of a measures table (one row per cube) that have rounding measures, in its order."""
    if not set(COLUMNS) <= {str(c) for c in measures.columns}:
        return []
    out = []
    for cube in measures.index:
        row = measures.loc[cube, list(COLUMNS)].astype("float64")
        if pd.isna(row[_BASE]):
            continue
        values = pd.DataFrame(
            {"value": [row[f"{m}@cube"] for m in MEASURES]}, index=pd.Index(list(MEASURES), name="measure")
        )
        out.append(RoundedCube(str(cube), int(row[_BASE]), int(row[_STEPS]), values))
    return out
