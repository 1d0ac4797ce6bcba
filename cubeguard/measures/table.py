"""A configured set of measures for one cube, and a DataFrame of them over many cubes.

:class:`MeasureSpec` lists the measures and the *scopes* they are computed on: ``"cube"`` (every
cell, totals and subtotals included), ``"interior"`` (the finest cells) or a margin given by its
dimensions (see :mod:`cubeguard.measures.select`). :func:`measure_cube` returns a flat
``dict[str, float]`` keyed ``"<measure>@<scope>"`` (``"rad@interior"``, ``"hellinger@GEO.M*SEX"``);
statistics compared before and after protection give two keys, ``"<measure>_original@<scope>"``
and ``"<measure>_protected@<scope>"``. Measures that do not apply to a scope are left out: Cramér's
V needs a two-way scope, the entropy risk a table (not ``"cube"``), median entropy, ANOVA R² and the
variance of the average cell size the dimensions they name. A cube rounded to a public base, given
its :class:`~cubeguard.measures.rounding.RoundingParams`, also gets the rounding measures over every
cell (:data:`ROUNDING_KEYS`, scope ``"cube"``); other cubes get none. :func:`measure_cubes` stacks
the dicts of many cubes into a DataFrame with one row per cube (a key a cube lacks is ``nan``).

Every measure works on numpy arrays of the selected cells, so the cost is a few passes over each
cube's cells; ranks use histograms instead of sorts (see :mod:`cubeguard.measures._ranks`).
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr
from pydantic import BaseModel, ConfigDict, Field, model_validator

from cubeguard.cubes.tree import DimHierarchy, IntArray, InvalidCubeError, hierarchies
from cubeguard.errors import CubeguardError
from cubeguard.measures import (
    association,
    disclosive,
    distance,
    entropy,
    loglinear,
    risk,
    rounding,
    small_origin,
    tests_stat,
    variance,
)
from cubeguard.measures._arrays import NumArray, check_same_cells, count_array, numeric
from cubeguard.measures.errors import MeasureConfigError
from cubeguard.measures.select import scope_label, scope_positions, take
from cubeguard.measures.transitions import Transitions, with_stayers

MeasureName = Literal[
    "absolute_distance",
    "average_absolute_distance",
    "rad",
    "rad_sum",
    "hellinger",
    "hellinger_counts",
    "max_abs_deviation",
    "spearman",
    "cramers_v",
    "loglinear_fit",
    "wilcoxon",
    "median_entropy",
    "avg_cell_size_variance",
    "anova_r2",
    "small_cells_unchanged",
    "small_origin_risk",
    "zeros_kept",
    "entropy_risk",
    "directly_disclosive",
    "swap_success",
]
ScopeSpec = Literal["cube", "interior"] | tuple[str, ...]

#: Measures-table keys (before ``@``) -> (the measure computing them, where they exist).
#: ``any``: every scope; ``table``: not the whole cube; ``cube``: only the whole cube. A measure not in
#: ``_KEYED_OTHERWISE`` writes one key, its name; ``anova_r2`` is not offered to sweeps.
_KEYED_OTHERWISE = {"wilcoxon", "cramers_v", "median_entropy", "avg_cell_size_variance", "anova_r2", "entropy_risk"}
_KEYED_OTHERWISE |= {"directly_disclosive", "swap_success", "loglinear_fit"}
MEASURE_KEYS: dict[str, tuple[MeasureName, str]] = {
    **{name: (name, "any") for name in typing.get_args(MeasureName) if name not in _KEYED_OTHERWISE},
    "wilcoxon_p": ("wilcoxon", "any"),
    **{f"cramers_v_{side}": ("cramers_v", "two-way") for side in ("original", "protected")},
    **{f"loglinear_fit_{side}": ("loglinear_fit", "table") for side in ("original", "protected")},
    **{f"median_entropy_{side}": ("median_entropy", "any") for side in ("original", "protected")},
    **{f"avg_cell_size_variance_{side}": ("avg_cell_size_variance", "any") for side in ("original", "protected")},
    **{f"entropy_risk_{side}": ("entropy_risk", "table") for side in ("original", "protected")},
    **{
        key: ("directly_disclosive", "cube")
        for key in (
            "disclosive_original",
            "disclosive_protected",
            "disclosive_true",
            "disclosive_share_original",
            "disclosive_share_protected",
        )
    },
    "swap_removed_share": ("swap_success", "cube"),
    "swap_false_share": ("swap_success", "cube"),
}

#: Keys (before ``@cube``) written for a cube measured with its rounding's public parameters: the
#: measures of :mod:`cubeguard.measures.rounding`, then the base and steps they were read with.
ROUNDING_KEYS: tuple[str, ...] = (*rounding.RoundingMeasures._fields, "rounding_base", "rounding_steps")

DEFAULT_MEASURES: tuple[MeasureName, ...] = (
    "absolute_distance",
    "average_absolute_distance",
    "rad",
    "rad_sum",
    "hellinger",
    "max_abs_deviation",
    "spearman",
    "loglinear_fit",
    "small_cells_unchanged",
    "small_origin_risk",
    "zeros_kept",
    "entropy_risk",
    "directly_disclosive",
)

#: Tables of more cells get no log-linear fit (NaN): IPF cycles over the whole table, too slow per release.
LOGLINEAR_MAX_CELLS = 200_000

_PAIRWISE: dict[str, Callable[[distance.CellPair], float]] = {
    "absolute_distance": distance.CellPair.absolute_distance,
    "average_absolute_distance": distance.CellPair.average_absolute_distance,
    "rad": distance.CellPair.relative_absolute_distance,
    "rad_sum": distance.CellPair.relative_absolute_distance_sum,
    "hellinger": distance.CellPair.hellinger_distance,
    "hellinger_counts": distance.CellPair.hellinger_distance_counts,
    "max_abs_deviation": distance.CellPair.max_absolute_deviation,
}
_SIMPLE: dict[str, Callable[[NumArray, NumArray], float]] = {
    "spearman": association.spearman_rank_correlation,
    "zeros_kept": risk.zeros_kept,
}


class MeasureSpec(BaseModel):
    """Which measures to compute on which cells of a cube (frozen; unknown keys rejected).

    Attributes:
        measures: measure names, see :data:`MeasureName`.
        scopes: ``"cube"``, ``"interior"`` or margins as tuples of dimension names.
        small_values: original values that count as small cells (Shlomo 2009, 4.1).
        coalition: ``k`` for directly disclosive cells (Handbook on SDC v2, 5.9).
        swap_coalition: ``k`` for the attribute disclosures of the swapping success measures.
        sensitive_dims: dimensions whose marginals are checked for direct disclosure (all if None).
        entropy_groups: dimensions defining the sub-groups of the median entropy (Shlomo 2009, 4.1).
        variance_by: dimensions defining the rows of the average cell size (none: whole table).
        anova_target: the dimension whose code positions are the ANOVA target scores.
        risk_weights: weights ``(w1, w2, w3)`` of the entropy risk (Handbook on SDC v2, 5.9).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    measures: tuple[MeasureName, ...] = DEFAULT_MEASURES
    scopes: tuple[ScopeSpec, ...] = ("interior",)
    small_values: tuple[int, ...] = (1, 2)
    coalition: int = Field(default=1, ge=0)
    swap_coalition: int = Field(default=0, ge=0)
    sensitive_dims: tuple[str, ...] | None = None
    entropy_groups: tuple[str, ...] = ()
    variance_by: tuple[str, ...] = ()
    anova_target: str | None = None
    risk_weights: tuple[float, float, float] = risk.EQUAL_WEIGHTS

    @model_validator(mode="after")
    def _consistent(self) -> MeasureSpec:
        if len(set(self.measures)) != len(self.measures):
            raise ValueError("list each measure once")
        if "anova_r2" in self.measures and self.anova_target is None:
            raise ValueError("measure 'anova_r2' needs 'anova_target', the dimension holding the scores")
        w = self.risk_weights
        if min(w) < 0 or not math.isclose(sum(w), 1.0, abs_tol=1e-9):
            raise ValueError("risk_weights must be three non-negative numbers summing to 1")
        return self


def _spec_problems(spec: MeasureSpec, dims: list[str]) -> list[str]:
    known = set(dims)
    problems = []
    for n, scope in enumerate(spec.scopes):
        if not isinstance(scope, str) and (not scope or not set(scope) <= known):
            problems.append(f"scopes[{n}]: unknown dimension(s) {sorted(set(scope) - known) or '(none given)'}")
    named = {
        "sensitive_dims": spec.sensitive_dims or (),
        "entropy_groups": spec.entropy_groups,
        "variance_by": spec.variance_by,
        "anova_target": (spec.anova_target,) if spec.anova_target else (),
    }
    for key, ds in named.items():
        bad = sorted(set(ds) - known)
        if bad:
            problems.append(f"{key}: unknown dimension(s) {bad}")
    if problems:
        problems[-1] += f"; known: {', '.join(dims)}"
    return problems


def _named(
    values: NumArray, kept: list[str], hier: dict[str, DimHierarchy], pos: Mapping[str, int | IntArray | None]
) -> xr.DataArray:
    coords = {}
    for d in kept:
        p = pos[d]
        codes = np.asarray(hier[d].codes, dtype=object)
        coords[d] = codes if p is None else codes[p]
    return xr.DataArray(values, dims=kept, coords=coords)


def _scope_measures(
    spec: MeasureSpec,
    o: NumArray,
    p: NumArray,
    kept: list[str],
    named: Callable[[NumArray], xr.DataArray],
    label: str,
    moves: Transitions | None = None,
) -> dict[str, float]:
    out: dict[str, float] = {}
    m = set(spec.measures)
    cells = distance.CellPair(o, p)
    for name, method in _PAIRWISE.items():
        if name in m:
            out[f"{name}@{label}"] = method(cells)
    for name, fn in _SIMPLE.items():
        if name in m:
            out[f"{name}@{label}"] = fn(o, p)
    if "small_cells_unchanged" in m:
        out[f"small_cells_unchanged@{label}"] = risk.small_cells_unchanged(o, p, spec.small_values)
    if "small_origin_risk" in m:
        out[f"small_origin_risk@{label}"] = small_origin.small_origin_risk(o, p, spec.small_values)
    if "wilcoxon" in m:
        out[f"wilcoxon_p@{label}"] = tests_stat.wilcoxon_signed_rank(o, p).p_value
    if "cramers_v" in m and len(kept) == 2:
        _put(out, "cramers_v", label, association.cramers_v_change(o, p))
    if "loglinear_fit" in m and label != "cube" and len(kept) >= 2:
        small = o.size <= LOGLINEAR_MAX_CELLS
        _put(out, "loglinear_fit", label, loglinear.pearson_fit_change(o, p) if small else (math.nan, math.nan))
    if "entropy_risk" in m and label != "cube":
        total = float(o.sum())
        r = risk.entropy_risk(o, spec.risk_weights) if total > 0 else math.nan
        r_sharp = risk.entropy_risk_protected(o, p, spec.risk_weights, moves) if total > 0 else math.nan
        _put(out, "entropy_risk", label, (r, r_sharp))
    wanted_named = {"median_entropy", "avg_cell_size_variance", "anova_r2"} & m
    if wanted_named:
        no, np_ = named(o), named(p)
        if "median_entropy" in m and set(spec.entropy_groups) <= set(kept):
            _put(out, "median_entropy", label, entropy.median_entropy_change(no, np_, spec.entropy_groups))
        if "avg_cell_size_variance" in m and set(spec.variance_by) <= set(kept):
            ch = variance.average_cell_size_variance_change(no, np_, spec.variance_by)
            _put(out, "avg_cell_size_variance", label, ch)
        if "anova_r2" in m and spec.anova_target in kept and len(kept) >= 2:
            _put(out, "anova_r2", label, variance.anova_r2_change(no, np_, str(spec.anova_target)))
    return out


def _put(out: dict[str, float], name: str, label: str, pair: tuple[float, float]) -> None:
    out[f"{name}_original@{label}"] = float(pair[0])
    out[f"{name}_protected@{label}"] = float(pair[1])


def _rounding(o: NumArray, p: NumArray, params: rounding.RoundingParams) -> dict[str, float]:
    """The :data:`ROUNDING_KEYS` of a whole cube's cells, keyed ``"<key>@cube"``."""
    values = (*rounding.rounding_measures(o, p, params), float(params.base), float(params.steps))
    return {f"{key}@cube": float(v) for key, v in zip(ROUNDING_KEYS, values, strict=True)}


def measure_cube(
    original: xr.Dataset | xr.DataArray,
    protected: xr.Dataset | xr.DataArray,
    spec: MeasureSpec,
    rounded: rounding.RoundingParams | None = None,
    *,
    transitions: Transitions | None = None,
    imputed: xr.Dataset | xr.DataArray | None = None,
    moved: Transitions | None = None,
) -> dict[str, float]:
    """Compute ``spec``'s measures for one cube (see the module docstring for the keys).

    ``rounded``: the public parameters of the rounding that published the cube, if its last
    protection step rounds to a base; given, the :data:`ROUNDING_KEYS` of every cell are added.
    ``transitions``: for a cube tabulated from swapped microdata, the persons moving between its
    interior cells (flat positions of the interior, C order; Handbook on SDC v2, 5.9), used for
    ``entropy_risk_protected@interior`` instead of cell-value transitions; other scopes keep
    cell-value transitions. ``moved``: instead of ``transitions``, only the units that moved
    between interior cells; every other unit of the original stays in its cell
    (:func:`~cubeguard.measures.transitions.with_stayers`). ``imputed``: the cube of imputed
    records, so that ``swap_success`` counts only real cases (Frend et al. 2011, section 4).

    Raises:
        InvalidCubeError: if the cube does not follow the cube convention.
        CubeMismatchError: if the protected cube has other cells than the original.
        MeasureConfigError: listing every name in ``spec`` that is not a dimension of the cube.
    """
    o_da, p_da = count_array(original), count_array(protected)
    if not isinstance(o_da, xr.DataArray) or not isinstance(p_da, xr.DataArray):
        raise InvalidCubeError("measure_cube needs cubes (Datasets or DataArrays with hierarchy coordinates)")
    o_da, p_da = o_da.compute(), p_da.compute()  # read a lazy (Zarr) cube once, not once per measure family
    check_same_cells(o_da, p_da)
    dims = [str(d) for d in o_da.dims]
    problems = _spec_problems(spec, dims)
    if problems:
        raise MeasureConfigError("the measure spec does not fit the cube: " + "; ".join(problems))
    hier = hierarchies(o_da)
    ov, pv = numeric(o_da), numeric(p_da)
    out: dict[str, float] = {}
    for scope in spec.scopes:
        pos = scope_positions(hier, dims, scope)
        kept = [d for d in dims if not isinstance(pos[d], int)]
        o, p = take(ov, [pos[d] for d in dims]), take(pv, [pos[d] for d in dims])
        label = scope_label(scope)
        moves = None if scope != "interior" else transitions if moved is None else with_stayers(moved, o)
        out.update(_scope_measures(spec, o, p, kept, partial(_named, kept=kept, hier=hier, pos=pos), label, moves))
    if "directly_disclosive" in spec.measures:
        dc = disclosive.disclosive_cells(o_da, p_da, spec.coalition, spec.sensitive_dims)
        out["disclosive_original@cube"] = float(dc.original)
        out["disclosive_protected@cube"] = float(dc.protected)
        out["disclosive_true@cube"] = float(dc.both)
        _put(out, "disclosive_share", "cube", (dc.share_original, dc.share_protected))
    if "swap_success" in spec.measures:
        sw = disclosive.swap_success(o_da, p_da, spec.swap_coalition, spec.sensitive_dims, imputed)
        out["swap_removed_share@cube"] = sw.removed_share
        out["swap_false_share@cube"] = sw.false_share
    if rounded is not None:
        out.update(_rounding(ov, pv, rounded))
    return out


CubePair = tuple[xr.Dataset | xr.DataArray, xr.Dataset | xr.DataArray]


def measure_cubes(
    cubes: Mapping[str, CubePair] | Iterable[tuple[str, CubePair]],
    spec: MeasureSpec,
    *,
    workers: int = 1,
    rounded: Mapping[str, rounding.RoundingParams] | None = None,
    moved: Mapping[str, Transitions] | None = None,
) -> pd.DataFrame:
    """One row of :func:`measure_cube` per cube, indexed by cube name (columns: the union of keys).

    ``workers > 1`` measures cubes in threads (numpy releases the GIL in its array passes). Every
    cube is measured; if some fail, one :class:`MeasureConfigError` lists them all. ``rounded``
    gives, per cube name, the public parameters of the rounding that published it (cubes not in
    it get no rounding measures). ``moved`` gives, per cube name, the units a pre-tabular step
    moved between its interior cells: its ``r#`` then uses unit transitions (see :func:`measure_cube`).
    """
    items = list(cubes.items()) if isinstance(cubes, Mapping) else list(cubes)
    params = dict(rounded or {})
    units = dict(moved or {})

    def one(item: tuple[str, CubePair]) -> tuple[str, dict[str, float] | str]:
        name, (orig, prot) = item
        try:
            return name, measure_cube(orig, prot, spec, params.get(name), moved=units.get(name))
        except CubeguardError as err:
            return name, str(err)

    if workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(one, items))
    else:
        results = [one(i) for i in items]
    failed = [f"{n}: {r}" for n, r in results if isinstance(r, str)]
    if failed:
        more = f"; and {len(failed) - 5} more" if len(failed) > 5 else ""
        raise MeasureConfigError(f"{len(failed)} cube(s) could not be measured: " + "; ".join(failed[:5]) + more)
    rows = {n: r for n, r in results if isinstance(r, dict)}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "cube"
    return frame
