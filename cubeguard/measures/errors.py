"""Mistakes a user can make when measuring a protected cube (all :class:`CubeguardError`)."""

from cubeguard.errors import CubeguardError


class InvalidCubeError(CubeguardError):
    """A cube lacks what the cube convention requires (hierarchy coordinates, one total)."""


class CubeMismatchError(CubeguardError):
    """The original and the protected cube (or table) do not have the same cells."""


class NegativeCountError(CubeguardError):
    """A measure defined on counts received a negative published count."""


class MeasureConfigError(CubeguardError):
    """A measure's parameters or a measure spec do not fit the cube."""
