"""What every record-swapping method shares: column-name types, the seeded generator, the data errors.

Each swapping method's parameters are its config model (``cubeguard.methods.<method>.model``),
which checks what needs no data. Problems that need the data (missing columns, missing values,
values that vary inside a household) raise :class:`SwapDataError`.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from cubeguard.errors import CubeguardError, InternalError

ColumnName = Annotated[str, Field(min_length=1)]
Columns = tuple[ColumnName, ...]


class SwapDataError(CubeguardError):
    """The data do not fit the swap parameters (the message says which column and what to change)."""


class SwapSeedError(CubeguardError):
    """The seed is not a non-negative integer."""


def generator(seed: int) -> np.random.Generator:
    """The PCG64 generator every swapping method draws from, seeded explicitly."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        got = (
            "a negative integer"
            if isinstance(seed, int | np.integer) and not isinstance(seed, bool)
            else type(seed).__name__
        )
        raise SwapSeedError(f"seed must be a non-negative integer, got {got} (the value is secret, so it is not shown)")
    return np.random.Generator(np.random.PCG64(int(seed)))


def duplicates(names: list[str]) -> list[str]:
    """The names that occur more than once, sorted."""
    return sorted({n for n in names if names.count(n) > 1})


def id_column(name: str | None) -> str:
    """An id column a step takes from the input when it names none (filled in before a kernel runs)."""
    if name is None:
        raise InternalError("a swap step's id column was not filled in from the input; this is a bug in cubeguard")
    return name


def number(value: object) -> float:
    """A resolved secret parameter as a number (a reference left unresolved here is a bug)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InternalError("a swap parameter given by reference was not resolved; this is a bug in cubeguard")
    return value
