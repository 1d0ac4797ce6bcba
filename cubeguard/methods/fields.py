"""The field vocabulary of method configs: seeds, control groups, populations, bases.

Each is an ``Annotated`` type with its description, so every method says the same thing the same
way in the config reference.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from cubeguard.secrets import EnvSecret, PrefectSecret

ReportCubes = Annotated[
    list[str],
    Field(
        default_factory=list,
        description="Hypercube ids tabulated before and after this step; their information loss and "
        "disclosure measures go into the step's internal report.",
    ),
]
Where = Annotated[
    dict[str, list[str] | list[int]],
    Field(
        default_factory=dict,
        description="Only households whose records have these raw values take part (e.g. "
        "{hh_kind: [P]}: private households); use household-level columns.",
    ),
]
HouseholdId = Annotated[str | None, Field(default=None, description="Household id column; default input.household_id.")]
Seed = Annotated[
    int | EnvSecret | PrefectSecret | None,
    Field(
        default=None, description="Seed of the method's random generator, a non-negative integer (secret; required)."
    ),
]

CellSeed = Annotated[
    Annotated[int, Field(ge=0)] | EnvSecret | PrefectSecret | None,
    Field(
        default=None,
        description="Seed of a random stream (secret, a non-negative integer); without it each cell's draw "
        "comes from its cell key, the same in every cube, so a cell that is interior in several cubes (leaf "
        "codes of the same variables) gets the same draw in each; margins, and the cells of methods that draw "
        "per control group (semi-controlled rounding, stochastic perturbation), may still differ between cubes.",
    ),
]

#: Control groups: semi-controlled rounding rounds each group's total at random and its interior to add up to
#: it; stochastic perturbation keeps each group's total exact.
Control = Annotated[
    list[str],
    Field(
        default_factory=list,
        description="Breakdown ids whose codes at control_depth are the control groups (the first one a cube has); "
        "empty: the cube's overall total is the one control.",
    ),
]
ControlDepth = Annotated[
    int,
    Field(default=1, ge=0, strict=True, description="Depth of the control codes along that breakdown (0: its total)."),
]


def base_field(minimum: int, description: str) -> Any:
    """The public ``base`` of a rounding-like method: an integer from ``minimum``, default 3.

    Strict, so YAML's ``true`` is not base 1 nor the string ``"5"`` base 5; at most 10^9.
    """
    return Field(default=3, ge=minimum, le=1_000_000_000, strict=True, description=description)
