"""Mistakes a user can make when measuring a protected cube (all :class:`CubeguardError`).

A cube that breaks the cube convention raises :class:`cubeguard.cubes.tree.InvalidCubeError`, where
the convention is read.
"""

from cubeguard.errors import CubeguardError


class CubeMismatchError(CubeguardError):
    """The original and the protected cube (or table) do not have the same cells."""


class NegativeCountError(CubeguardError):
    """A measure defined on counts received a negative published count."""


class MeasureConfigError(CubeguardError):
    """A measure's parameters or a measure spec do not fit the cube."""
