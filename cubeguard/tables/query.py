"""A flexible-table request, its caps, and the refusal that names the rule it broke and the parameter."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from cubeguard.cubes.spec import Frozen
from cubeguard.errors import CubeguardError

MAX_ID = 64  # characters of a breakdown, population or mean id
MAX_CODE = 64  # characters of a filter's code
MAX_BREAKDOWNS = 16  # breakdowns of a table (max_dimensions stops far fewer: this bounds the work of a check)
MAX_FILTERS = 16  # filters of a table
Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID)]
Code = Annotated[str, StringConstraints(min_length=1, max_length=MAX_CODE)]


class TableQuery(Frozen):
    """Cross ``breakdowns`` (one dimension each, in this order) over ``population``.

    ``filters`` restrict the table to one code of an offered breakdown each (for example one
    region, or one age group); ``mean`` names a numeric column of ``tables.means`` whose cell means
    the table adds. With ``per_area`` each code of the first breakdown (an area, as ONS's table
    builder has it) is judged on its own by the rules on a table's values, as a table filtered to
    it would be: the codes that fail are withheld, the rule named, and the rest served.
    """

    breakdowns: list[Id] = Field(min_length=1, max_length=MAX_BREAKDOWNS)
    population: Id = "total"
    filters: dict[Id, Code] = Field(default_factory=dict, max_length=MAX_FILTERS)
    mean: Id | None = None
    per_area: bool = False

    def key(self) -> tuple[object, ...]:
        """A hashable identity: the same table whatever the order the filters were given in."""
        return (tuple(self.breakdowns), self.population, tuple(sorted(self.filters.items())), self.mean, self.per_area)


class TableRefused(CubeguardError):
    """A query the rules refuse: ``rule`` names the rule, the message says what to change.

    ``parameter`` names the query's field to change (``breakdowns``, ``population``, ``filters``,
    ``mean``, ...), or is ``None`` for a rule on the published table's values.
    """

    def __init__(self, rule: str, message: str, parameter: str | None = None) -> None:
        self.rule = rule
        self.parameter = parameter
        super().__init__(message)


class QueryTooLarge(TableRefused):
    """A query string or body over its size cap, refused before it is read further."""
