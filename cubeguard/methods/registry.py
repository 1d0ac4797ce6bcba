"""The registry: the single place a protection method is listed.

The config step unions, the loader's error paths, the manifest's public parameters, the sweep's
grids, the config reference and the JSON Schema are all built from :data:`METHODS`. Adding a method
is one package under :mod:`cubeguard.methods` plus one line here.
"""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import Field

from cubeguard.errors import InternalError
from cubeguard.methods import (
    barnardisation,
    cell_key,
    controlled_rounding,
    conventional_rounding,
    identity,
    ons_communal_swap,
    ons_household_swap,
    random_rounding,
    random_swap,
    safe,
    semi_controlled_rounding,
    small_cell_adjustment,
    stochastic_perturbation,
    targeted_swap,
)
from cubeguard.methods.base import CubeMethod, Method, MicrodataMethod
from cubeguard.methods.validation import union_tags

METHODS: tuple[Method, ...] = (
    identity.METHOD,
    cell_key.METHOD,
    conventional_rounding.METHOD,
    controlled_rounding.METHOD,
    random_rounding.METHOD,
    semi_controlled_rounding.METHOD,
    small_cell_adjustment.METHOD,
    barnardisation.METHOD,
    stochastic_perturbation.METHOD,
    targeted_swap.METHOD,
    random_swap.METHOD,
    ons_household_swap.METHOD,
    ons_communal_swap.METHOD,
    safe.METHOD,
)

BY_NAME: dict[str, Method] = {m.name: m for m in METHODS}
CUBE_METHODS: dict[str, CubeMethod[Any]] = {m.name: m for m in METHODS if isinstance(m, CubeMethod)}
MICRODATA_METHODS: dict[str, MicrodataMethod[Any]] = {m.name: m for m in METHODS if isinstance(m, MicrodataMethod)}
#: Location parts of a config validation error that name a union member, not a key.
UNION_TAGS = union_tags(list(BY_NAME))


def _union(methods: dict[str, Any]) -> Any:
    models = tuple(m.model for m in methods.values())
    return Annotated[Union[models], Field(discriminator="method")]  # noqa: UP007  # built at run time


#: A post-tabular step of a release config (``steps:``), one member per cube method.
CubeStepSpec = _union(CUBE_METHODS)
#: A pre-tabular step of a release config (``pre_tabular:``), one member per microdata method.
MicrodataStepSpec = _union(MICRODATA_METHODS)


def method_of(step: Any) -> Method:
    """The registered method of a configured step.

    Raises:
        InternalError: no method of that name is registered (a step model built outside the config).
    """
    method = BY_NAME.get(step.method)
    if method is None:
        raise InternalError(
            f"step method {step.method!r} is not registered in cubeguard.methods.registry; this is a bug in cubeguard"
        )
    return method
