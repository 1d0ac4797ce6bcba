"""The release's measure step: information loss and disclosure risk of every cube, to Parquet.

Each published cube is compared with its original: the cube in ``original.zarr``, or, for a
release with pre-tabular steps (record swapping, SAFE), the cube of the microdata as delivered
(:mod:`cubeguard.pipeline.true_original`), so that the measures show what the swap did too.
The entropy risk ``r#`` of such a cube (Handbook on SDC v2, 5.9) uses the unit transitions
``F#_ij`` of the units the steps moved when no post-tabular step protects the cube, and
cell-value transitions when one does (its perturbation acts on cell values); the column
:data:`BASIS_COLUMN` says which, per cube (1: units, 0: cell values). Releases without
pre-tabular steps get the same table as before, without that column.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr

from cubeguard.config.load import Release
from cubeguard.config.protection import last_protection
from cubeguard.cubes.store import list_cubes, load_cube, open_cube
from cubeguard.cubes.values import sum_name
from cubeguard.errors import CubeguardError, InternalError
from cubeguard.measures.magnitudes import sum_losses
from cubeguard.measures.rounding import RoundingParams
from cubeguard.measures.table import MeasureSpec, measure_cubes
from cubeguard.measures.transitions import Transitions
from cubeguard.methods.registry import CUBE_METHODS
from cubeguard.pipeline.tabulation import plans_for
from cubeguard.pipeline.true_original import release_moves, true_original
from cubeguard.pipeline.unit_moves import CellMoves

#: Measures-table column saying what ``r#`` of a swap release's cube used: 1.0 the units moved, 0.0 cell values.
BASIS_COLUMN = "unit_transitions@interior"

Pairs = dict[str, tuple[xr.Dataset, xr.Dataset]]


def cube_pairs(release: Release) -> Pairs:
    """(original, protected) of every cube, read lazily; the measure step measures these.

    The original is the cube of the microdata as delivered when the release has pre-tabular
    steps (derived from ``original.zarr`` and the units they moved, ``count`` only), else the cube
    in ``original.zarr``.
    """
    return _pairs_and_moves(release)[0]


def stored_pairs(release: Release) -> Pairs:
    """(original, protected) of every cube as stored in ``original.zarr`` and ``protected.zarr``, opened lazily.

    For a release with pre-tabular steps the original here is the tabulation of the changed
    microdata; the measures and gates read :func:`cube_pairs`, the microdata as delivered.
    """
    out = release.config.output
    return {
        c: (open_cube(out.original_store, c), open_cube(out.protected_store, c))
        for c in list_cubes(out.protected_store)
    }


def _pairs_and_moves(release: Release) -> tuple[Pairs, dict[str, CellMoves]]:
    """:func:`cube_pairs`, and the units the pre-tabular steps moved in each cube (none without steps)."""
    if not release.config.pre_tabular:
        return stored_pairs(release), {}
    protected = release.config.output.protected_store
    plans = {p.cube_id: p for p in plans_for(release)}
    cubes = list_cubes(protected)
    unknown = sorted(set(cubes) - set(plans))
    if unknown:
        raise CubeguardError(
            f"store {protected} holds cube(s) {unknown[:5]} the release config does not tabulate; "
            "rerun the release with --fresh"
        )
    moves = release_moves(release)
    pairs = {c: (true_original(release, plans[c], moves[c]), open_cube(protected, c)) for c in cubes}
    return pairs, moves


def measures_file(release: Release) -> Path:
    """Where the measure step writes its table (internal: measures of protected and original cells)."""
    return release.config.output.internal / "measures.parquet"


def rounding_params(release: Release, cube_id: str) -> RoundingParams | None:
    """The public parameters a user reads ``cube_id`` with, when its last protection step rounds to a base.

    Read through the method's ``public`` allow-list (what the manifest shows), so no secret
    parameter is touched: ``base``, and ``steps`` for controlled rounding (1 for the others). The
    steps a controlled rounding needed (``steps_used`` in its internal report) are not published,
    so the measures use the ``steps`` a user knows: a fallback that goes beyond them shows as
    existence intervals that miss the original.
    """
    step = last_protection(release.config, cube_id)
    if step is None or not CUBE_METHODS[step.method].rounds:
        return None
    public = CUBE_METHODS[step.method].public(step)
    base, steps = public.get("base"), public.get("steps", 1)
    if not isinstance(base, int) or not isinstance(steps, int):
        raise InternalError(f"rounding step {step.name!r} shows no integer base and steps; this is a bug in cubeguard")
    return RoundingParams(base=base, steps=steps)


def measure_release(release: Release, spec: MeasureSpec | None = None) -> Path:
    """Measure every cube (two at a time in memory, in threads) and write one row per cube to Parquet.

    The pairs are :func:`cube_pairs`'s. Cubes published by rounding to a base also get the rounding
    measures (see :func:`rounding_params`); a release with pre-tabular steps gets :data:`BASIS_COLUMN`
    (see :func:`moved_units`).
    """
    pairs, moves = _pairs_and_moves(release)
    rounded = {c: r for c, (_, p) in pairs.items() if (r := rounding_params(release, c)) is not None}
    units = moved_units(release, moves)
    table: pd.DataFrame = measure_cubes(pairs, spec or MeasureSpec(), workers=2, rounded=rounded, moved=units)
    if moves and "entropy_risk_protected@interior" in table.columns:
        table[BASIS_COLUMN] = [float(c in units) for c in table.index]
    table = _with_method_facts(release, table, {c: p.attrs for c, (_, p) in pairs.items()})
    table = _with_sum_losses(release, table)
    target = measures_file(release)
    target.parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(target)
    return target


def moved_units(release: Release, moves: Mapping[str, CellMoves]) -> dict[str, Transitions]:
    """The moved units of each cube whose ``r#`` uses unit transitions (Handbook on SDC v2, 5.9).

    Those of a cube no post-tabular step protects, as long as no unit moved into or out of its
    population (``F#`` must add up to both tables); the other cubes use cell-value transitions.
    """
    return {c: m.transitions() for c, m in moves.items() if m.within and last_protection(release.config, c) is None}


def sum_loss_pairs(release: Release) -> dict[tuple[str, str], tuple[xr.Dataset, xr.Dataset]]:
    """Per (cube, summed column): ``count`` and ``sum.<column>`` of ``original.zarr`` and ``protected.zarr``, loaded.

    The stored original: for a release with pre-tabular steps, the swapped microdata's sums (the cubes
    as delivered are rebuilt for counts only).
    """
    out = release.config.output
    found = {}
    for cube in release.config.hypercubes:
        for column in cube.sums:
            names = ["count", sum_name(column)]
            found[(cube.id, column)] = (
                load_cube(out.original_store, cube.id, names),
                load_cube(out.protected_store, cube.id, names),
            )
    return found


def _with_sum_losses(release: Release, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with, for each cube that publishes sums, their loss and that of the means (``<measure>@sum.<column>``)."""
    rows: dict[str, dict[str, float]] = {}
    for (cube_id, column), (o, p) in sum_loss_pairs(release).items():
        name = sum_name(column)
        losses = sum_losses(o["count"].values, o[name].values, p["count"].values, p[name].values)
        rows.setdefault(cube_id, {}).update({f"{k}@{name}": v for k, v in losses.items()})
    if not rows:
        return table
    return table.join(pd.DataFrame.from_dict(rows, orient="index"), how="left")


def _with_method_facts(release: Release, table: pd.DataFrame, attrs: Mapping[str, Mapping[Any, Any]]) -> pd.DataFrame:
    """``table`` with, for each cube, the public facts of the method that protected it last (``<fact>@cube``).

    The facts are the method's own (:attr:`~cubeguard.methods.base.CubeMethod.facts`); a cube whose
    last method has none gets no value.
    """
    rows: dict[str, dict[str, float]] = {}
    for cube_id, cube_attrs in attrs.items():
        step = last_protection(release.config, cube_id)
        method = CUBE_METHODS.get(step.method) if step is not None else None
        if method is not None and method.facts is not None:
            rows[cube_id] = {f"{name}@cube": value for name, value in method.facts(cube_attrs).items()}
    if not rows:
        return table
    return table.join(pd.DataFrame.from_dict(rows, orient="index"), how="left")
