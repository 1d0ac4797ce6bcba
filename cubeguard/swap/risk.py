"""Disclosure risk per person and household at every geography level, and must-swap levels.

Handbook on SDC v2, 5.6.1: with k-anonymity as risk measure, the risk of person ``i`` at level ``k``
is ``r_ik = 1 / c_ik``, where ``c_ik`` counts the persons with the same values of the risk variables
in the same area of level ``k``; a dwelling takes the maximum over its members. A household must be
swapped at the first (highest) level where its risk exceeds the threshold ``1 / k_anonymity``,
i.e. where one member's group has fewer than ``k_anonymity`` persons. This is exactly sdcMicro
``recordSwap`` (C++ ``setRisk`` and ``setLevels``), including the floating-point comparison
``1/count > 1/k``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numba
import numpy as np
import numpy.typing as npt
import pandas as pd

from cubeguard.swap._households import (
    Households,
    IntArray,
    check_columns,
    check_household_level,
    combination_codes,
    dense_codes,
    encode_households,
    household_values,
    nested_area_codes,
    raise_problems,
)
from cubeguard.swap.common import id_column, number

FloatArray = npt.NDArray[np.float64]


class RiskParams(Protocol):
    """What the risk functions read of a targeted swap's parameters (its config model, secrets resolved)."""

    @property
    def household_id(self) -> str | None: ...  # noqa: D102
    @property
    def hierarchy(self) -> tuple[str, ...]: ...  # noqa: D102
    @property
    def risk_variables(self) -> tuple[str, ...]: ...  # noqa: D102
    @property
    def risk_columns(self) -> tuple[str, ...] | None: ...  # noqa: D102
    @property
    def risk_threshold(self) -> float | None: ...  # noqa: D102
    @property
    def k_anonymity(self) -> object: ...  # noqa: D102


def k_anonymity_risk(risk_code: IntArray, area_codes: Sequence[tuple[IntArray, int]]) -> FloatArray:
    """Person risk ``1 / count`` per level (rows x levels; Handbook on SDC v2, 5.6.1).

    Args:
        risk_code: dense code per person of the combination of risk variables.
        area_codes: per level, the area code of every person and the number of areas.
    """
    risk = np.empty((len(risk_code), len(area_codes)), dtype=np.float64)
    n_risk = int(risk_code.max()) + 1 if len(risk_code) else 1
    for level, (area, _) in enumerate(area_codes):
        cell, _ = dense_codes(area * n_risk + risk_code)
        counts = np.bincount(cell).astype(np.float64)
        risk[:, level] = 1.0 / counts[cell]
    return risk


@numba.njit(cache=True)
def _max_inverse_count(cell: IntArray, n_cells: int, of_row: IntArray, out: FloatArray) -> None:
    """``out[h] = max over rows of h of 1 / (rows in the row's cell)``."""
    counts = np.zeros(n_cells, dtype=np.int64)
    for c in cell:
        counts[c] += 1
    for row in range(cell.shape[0]):
        r = 1.0 / counts[cell[row]]
        if r > out[of_row[row]]:
            out[of_row[row]] = r


@numba.njit(cache=True)
def _max_inverse_count_direct(
    areas: IntArray,
    offsets: IntArray,
    risk_code: IntArray,
    n_risk: int,
    of_row: IntArray,
    out: FloatArray,
) -> None:
    """:func:`_max_inverse_count` for all levels at once, cell ``area * n_risk + risk_code``.

    ``areas`` are household areas (levels x households); level ``h`` counts in the table slice
    starting at ``offsets[h]``; ``out`` is households x levels.
    """
    counts = np.zeros(offsets[-1], dtype=np.int64)
    n_levels = areas.shape[0]
    for row in range(risk_code.shape[0]):
        for h in range(n_levels):
            counts[offsets[h] + areas[h, of_row[row]] * n_risk + risk_code[row]] += 1
    for row in range(risk_code.shape[0]):
        hh = of_row[row]
        for h in range(n_levels):
            r = 1.0 / counts[offsets[h] + areas[h, hh] * n_risk + risk_code[row]]
            if r > out[hh, h]:
                out[hh, h] = r


def household_k_anonymity_risk(
    risk_code: IntArray, households: Households, household_areas: Sequence[tuple[IntArray, int]]
) -> FloatArray:
    """Household risk per level: the maximum member risk ``1 / count`` (households x levels).

    Same values as ``household_max(k_anonymity_risk(...))`` without person-level temporaries.
    """
    n_risk = int(risk_code.max()) + 1 if len(risk_code) else 1
    out = np.zeros((households.n, len(household_areas)), dtype=np.float64)
    sizes = np.array([n * n_risk for _, n in household_areas], dtype=np.int64)
    if sizes.sum() <= 4 * len(risk_code) + 1024:
        areas = np.array([a for a, _ in household_areas], dtype=np.int64).reshape(len(sizes), -1)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        _max_inverse_count_direct(areas, offsets, risk_code, n_risk, households.of_row, out)
    else:
        for level, (area, _) in enumerate(household_areas):
            cell, n_cells = dense_codes(area[households.of_row] * n_risk + risk_code)
            _max_inverse_count(cell, n_cells, households.of_row, out[:, level])
    return out


@numba.njit(cache=True)
def _household_max(values: FloatArray, of_row: IntArray, n_households: int) -> FloatArray:
    out = np.zeros((n_households, values.shape[1]), dtype=np.float64)
    for row in range(values.shape[0]):
        hh = of_row[row]
        for level in range(values.shape[1]):
            if values[row, level] > out[hh, level]:
                out[hh, level] = values[row, level]
    return out


def household_max(values: FloatArray, households: Households) -> FloatArray:
    """Maximum of non-negative row values over the members of each household (households x levels)."""
    return _household_max(np.ascontiguousarray(values), households.of_row, households.n)


def risk_threshold(params: RiskParams) -> float:
    """Risk above which a household must be swapped: ``1/k`` (``inf`` for k = 0) or the user's."""
    if params.risk_columns is not None:
        assert params.risk_threshold is not None  # guaranteed by the targeted swap's model
        return params.risk_threshold
    k = number(params.k_anonymity)
    return math.inf if k == 0 else 1.0 / k


def must_swap_levels(household_risk: FloatArray, threshold: float) -> IntArray:
    """First level (0 = top) where the risk exceeds ``threshold``; ``n_levels`` where it never does."""
    n_levels = household_risk.shape[1]
    levels = np.full(household_risk.shape[0], n_levels, dtype=np.int64)
    for level in reversed(range(n_levels)):
        levels[household_risk[:, level] > threshold] = level
    return levels


def household_risk(
    data: pd.DataFrame,
    params: RiskParams,
    households: Households,
    household_areas: Sequence[tuple[IntArray, int]],
) -> FloatArray:
    """Household risk per level (households x levels): k-anonymity or the user's risk columns."""
    if params.risk_columns is not None:
        return household_max(data[list(params.risk_columns)].to_numpy(np.float64), households)
    risk_code, _ = combination_codes([data[c] for c in params.risk_variables], len(data))
    return household_k_anonymity_risk(risk_code, households, household_areas)


def check_risk_columns(data: pd.DataFrame, params: RiskParams) -> list[str]:
    """Problems with user risk columns: not numeric, negative or not finite."""
    problems: list[str] = []
    for column in params.risk_columns or ():
        if column not in data.columns:
            continue
        values = pd.to_numeric(data[column], errors="coerce").to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(values) & (values >= 0)):
            problems.append(f"risk column {column!r} must hold finite numbers >= 0")
    return problems


def household_risk_table(data: pd.DataFrame, params: RiskParams) -> pd.DataFrame:
    """Household risk per level and must-swap level, indexed by household id.

    Columns: one per hierarchy level (named like it) with the household risk, and ``must_swap_level``
    (the level name, or missing when the household need not be swapped).
    """
    columns = [id_column(params.household_id), *params.hierarchy, *params.risk_variables]
    problems = check_columns(data, [*columns, *(params.risk_columns or ())], "risk")
    problems += check_risk_columns(data, params)
    raise_problems(problems)
    households = encode_households(data, params.household_id)
    raise_problems(check_household_level(data, households, params.hierarchy))
    areas = nested_area_codes(household_values(data, households, params.hierarchy))
    risk = household_risk(data, params, households, areas)
    levels = must_swap_levels(risk, risk_threshold(params))
    table = pd.DataFrame(risk, index=households.ids, columns=list(params.hierarchy))
    names = pd.Index(list(params.hierarchy), dtype=object)
    codes = np.where(levels < len(names), levels, -1)
    table["must_swap_level"] = pd.Categorical.from_codes(codes, categories=names)
    return table
