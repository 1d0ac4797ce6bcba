"""A flexible-table request, and the refusal that names the rule it broke."""

from __future__ import annotations

from pydantic import Field

from cubeguard.cubes.spec import Frozen
from cubeguard.errors import CubeguardError


class TableQuery(Frozen):
    """Cross ``breakdowns`` (one dimension each, in this order) over ``population``.

    ``filters`` restrict the table to one code of an offered breakdown each (for example one
    region, or one age group); ``mean`` names a numeric column of ``tables.means`` whose cell means
    the table adds.
    """

    breakdowns: list[str] = Field(min_length=1)
    population: str = "total"
    filters: dict[str, str] = Field(default_factory=dict)
    mean: str | None = None

    def key(self) -> tuple[object, ...]:
        """A hashable identity: the same table whatever the order the filters were given in."""
        return (tuple(self.breakdowns), self.population, tuple(sorted(self.filters.items())), self.mean)


class TableRefused(CubeguardError):
    """A query the rules refuse: ``rule`` names the rule, the message says what to change."""

    def __init__(self, rule: str, message: str) -> None:
        self.rule = rule
        super().__init__(message)
