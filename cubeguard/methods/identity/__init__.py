"""Identity: publish counts unchanged, the noise-free path that must be exact through the whole flow."""

from __future__ import annotations

from typing import ClassVar, Literal

import xarray as xr

from cubeguard.methods.base import BoundsFunction, CubeFunction, CubeMethod
from cubeguard.methods.bounds import BoolArray, Bounds, IntArray, exact
from cubeguard.methods.models import CubeStep


class IdentityStep(CubeStep):
    """A step that publishes counts unchanged: the noise-free path that must be exact."""

    method: Literal["identity"]
    name: str = "identity"
    changes_counts: ClassVar[bool] = False


def identity(cube: xr.Dataset) -> xr.Dataset:
    """``cube`` unchanged, with zero noise unless an earlier step added some: counts are published as they are."""
    return cube if "noise" in cube else cube.assign(noise=cube["count"] * 0)


def _prepare(step: IdentityStep) -> CubeFunction:
    return identity


def _bounds(step: IdentityStep) -> BoundsFunction:
    """Every count is its original: ``lo = hi = published``, margins included."""

    def published_as_is(published: IntArray, interior: BoolArray) -> Bounds:
        return exact(published)

    return published_as_is


METHOD = CubeMethod(model=IdentityStep, public=lambda step: {}, prepare=_prepare, protects=False, bounds=_bounds)
