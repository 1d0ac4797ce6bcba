"""The ``tables`` section of a release config: flexible tables on demand and the rules they must pass.

Shlomo (2009, section 5) lists the rules a flexible table generator applies before it answers:
limit the number of dimensions, offer only consistent and nested categories (against
differencing), a minimum population, a minimum average cell size, a bound on the share of small
cells; and, since rules alone leave small cells, noise on the table itself. Here the noise is the
release's own cell key step, so a cell a user builds has the value the published cubes give it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Mapping

from pydantic import Field, field_validator

from cubeguard.cubes.spec import Frozen, PopulationSpec


class MeanSpec(Frozen):
    """A numeric column whose mean a table may show: m-hat / n-hat, its sum perturbed by the cell key step (Handbook 5.7).

    The column must hold whole numbers (sums are then exact in any order) and have its
    ``magnitudes`` entry in the release's cell key step.
    """

    column: str
    label: str = ""
    decimals: int = Field(
        default=1,
        ge=0,
        le=6,
        description="Decimal places a published mean is rounded to (half to even), as censuses publish a mean "
        "age to one: more digits only repeat the perturbed sum's noise and lengthen every answer.",
    )


class HouseholdSizeSpec(Frozen):
    """Where persons tables meet households tables: the household-size variable and the households population.

    A persons cell that fixes only household-level categories and a household size s holds
    exactly s persons per household, so its count is published as s times the households'
    published count (summed over the sizes of a size category): the two tables cannot be
    intersected into the original counts (see :mod:`cubeguard.tables.households`).
    """

    variable: str = Field(description="The household-size variable (integer codes, read from a household column).")
    population: str = Field(description="The households population whose counts persons counts by size come from.")


class TablesSpec(Frozen):
    """Flexible tables on demand (``cubeguard tables CONFIG``): what may be crossed, and the rules.

    Counts are the release's cell key step applied to the user's table with the release's record
    keys and p-table, so every cell equals the same cell of the published cubes. The data rules
    (minimum population, average cell size, small cells) look at the published (perturbed) table,
    so a refusal reveals nothing a published table would not.
    """

    breakdowns: list[str] = Field(
        min_length=1,
        description="Breakdowns users may cross or filter on (declared levels only; the levels offered "
        "for one variable must nest, so no two tables can be differenced into a new category).",
    )
    populations: list[str] = Field(default_factory=lambda: ["total"], min_length=1)
    max_dimensions: int = Field(default=4, ge=1, le=8, description="Variables in a table, filters included.")
    max_cells: int = Field(default=200_000, gt=0, description="Cells of a table, totals and subtotals included.")
    min_population: int = Field(default=0, ge=0, description="Least published total of a table.")
    min_average_cell_size: float = Field(
        default=0.0, ge=0, description="Least published total per interior (bottom) cell."
    )
    small_count: int = Field(default=3, ge=1, description="A published count from 1 to this is small.")
    max_small_cell_share: float = Field(
        default=1.0, ge=0, le=1, description="Largest share of interior cells whose published count is small."
    )
    means: dict[str, MeanSpec] = Field(
        default_factory=dict,
        description="Numeric columns whose cell means a table may show (as perturbed sum / perturbed count).",
    )
    precompute_cells: int = Field(
        default=50_000_000,
        ge=0,
        description="Bottom cells (16 bytes each, 16 more per mean whose magnitude type is mean or sum) of the "
        "finest crossings of max_dimensions variables that the service tabulates when it starts, smallest first, "
        "so a new table within them (with such a mean or none) is summed instead of tabulated from the records "
        "(0: none).",
    )
    household_size: HouseholdSizeSpec | None = Field(
        default=None,
        description="Needed when persons and households populations are offered with a household-size variable: "
        "persons counts by household size are then derived from the households' published counts.",
    )
    rate_limit_per_minute: int = Field(
        default=120, gt=0, description="Queries per client and minute, counted once for every worker of the service."
    )
    trusted_proxies: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="Reverse proxies (IP addresses or CIDR networks) whose X-Forwarded-For names the client for the "
        "rate limit and the query log; the client is then the rightmost forwarded address that is not one of them. "
        "Empty: the client is always the connection's peer and forwarded headers are ignored.",
    )
    admin_token_env: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="Name of the environment variable holding the admin endpoints' bearer token (unset: they are off).",
    )

    @field_validator("trusted_proxies")
    @classmethod
    def _addresses(cls, value: list[str]) -> list[str]:
        """Every entry an IP address or network; a host name or a typo stops the config load."""
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(
                    f"{entry[:64]!r} is not an IP address or CIDR network; write e.g. 10.0.0.5 or 10.0.0.0/8 "
                    "(host names are not resolved)"
                ) from None
        return value


def size_linked_persons(
    spec: TablesSpec, populations: Mapping[str, PopulationSpec], homes: Collection[str]
) -> list[str]:
    """The offered persons populations whose filter reads household columns only (``homes``).

    Their persons live in whole households, so a cell that fixes a household size s holds s
    persons per household: what links them to the households population.
    """
    return [p for p in spec.populations if populations[p].unit == "persons" and set(populations[p].where) <= set(homes)]
