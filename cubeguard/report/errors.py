"""Mistakes a user can make when building a protection report (all :class:`CubeguardError`)."""

from cubeguard.errors import CubeguardError


class ReportError(CubeguardError):
    """The inputs of a report do not fit together (missing stores, cubes, columns or data)."""
