"""The cubes of the microdata as delivered (the *true original*) of a release with pre-tabular steps.

``original.zarr`` is tabulated after the pre-tabular steps (record swapping, SAFE), so comparing it
with the published cubes misses their effect. The release's measures compare the published cubes
with the cubes of the microdata as delivered instead, derived without tabulating again:

1. one pass over the delivered and the swapped microdata, side by side (rows stay in order; only
   the columns the cubes read) finds the records whose values changed, and for each cube the
   interior cell of each of them before and after (:class:`~cubeguard.pipeline.unit_moves.CellMoves`;
   the unit transitions ``F#_ij`` of Handbook on SDC v2, 5.9, kept sparse);
2. each cube's interior before the steps is the one in ``original.zarr`` less the arrivals plus the
   departures, checked with :func:`~cubeguard.measures.transitions.check_transitions`, and its
   totals and subtotals are added up from it as the tabulation does (:func:`expand_all`).

Step 2 runs when a cube is read (a Dask array), so a reader keeps no more cubes in memory than it
would reading ``original.zarr``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial

import dask.array as da
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import xarray as xr
from dask.delayed import delayed

from cubeguard.config.load import Release
from cubeguard.cubes.margins import expand_all
from cubeguard.cubes.store import load_cube, open_cube
from cubeguard.cubes.tabulate import CubePlan
from cubeguard.errors import CubeguardError
from cubeguard.measures.errors import MeasureConfigError
from cubeguard.microdata.read import iter_batches
from cubeguard.pipeline.swap_effect import cube_columns
from cubeguard.pipeline.tabulation import plans_for, tabulation_source
from cubeguard.pipeline.unit_moves import CellMoves, check_moves, interior_cells, undo_moves

#: Cube attribute saying what the original was tabulated from (only on derived true originals).
ORIGIN_ATTR = "original_from"
ORIGIN = "the microdata as delivered, before the pre-tabular steps"


def release_moves(release: Release, batch_size: int = 1_000_000) -> dict[str, CellMoves]:
    """The units the release's pre-tabular steps moved between the interior cells of each cube.

    Reads the delivered microdata and the swapped file written by the pre-tabular step, batch by
    batch, only the columns the cubes read; records are paired by row (the step keeps row order),
    and by person id too when the data have one.

    Raises:
        CubeguardError: when the two files do not hold the same records in the same order.
    """
    cfg = release.config
    plans = plans_for(release)
    columns = cube_columns(release, [p.cube_id for p in plans])
    person = cfg.input.person_id if cfg.input.person_id in columns else None
    compared = [c for c in columns if c != person]
    delivered = iter_batches(cfg.input, columns, batch_size)
    swapped = iter_batches(tabulation_source(release), columns, batch_size)
    parts: list[list[CellMoves]] = [[] for _ in plans]
    for before, after in _aligned(delivered, swapped):
        if person is not None and not before.column(person).equals(after.column(person)):
            raise CubeguardError(_STALE.format(what=f"the person ids in column {person!r} differ row by row"))
        rows = pa.array(np.flatnonzero(_changed(before, after, compared)))
        if not len(rows):
            continue
        b, a = before.take(rows), after.take(rows)
        for n, plan in enumerate(plans):
            cells = (interior_cells(plan, cfg.populations, cfg.input.household_ref, x) for x in (b, a))
            parts[n].append(CellMoves.of_records(*cells))
    return {plan.cube_id: CellMoves.joined(parts[n]) for n, plan in enumerate(plans)}


_STALE = (
    "the swapped microdata do not pair with the delivered microdata ({what}); "
    "rerun the release with --fresh so that the pre-tabular step writes them again"
)


def true_original(release: Release, plan: CubePlan, moves: CellMoves) -> xr.Dataset:
    """The cube of ``plan`` as tabulated from the microdata as delivered, read lazily (``count`` only).

    Derived from the cube in ``original.zarr`` and ``moves`` when its ``count`` is computed (see
    :func:`delivered_counts`); coordinates and attributes are the stored cube's, with
    :data:`ORIGIN_ATTR`. The record-key sums are left out: nothing measured reads them.
    """
    store = release.config.output.original_store
    stored = open_cube(store, plan.cube_id, dask=False)
    count = stored["count"]
    derive = delayed(partial(delivered_counts, release, plan, moves), pure=False)
    values = da.from_delayed(derive(), shape=count.shape, dtype=np.int64)  # type: ignore[no-untyped-call]
    return xr.Dataset(
        {"count": (count.dims, values)}, coords=stored.coords, attrs={**stored.attrs, ORIGIN_ATTR: ORIGIN}
    )


def delivered_counts(release: Release, plan: CubePlan, moves: CellMoves) -> npt.NDArray[np.int64]:
    """Every cell (totals included) of the cube of ``plan`` before the pre-tabular steps.

    Raises:
        CubeguardError: when ``original.zarr`` does not hold the cube ``plan`` tabulates, or does
            not hold the units the steps moved (a store older than the swapped microdata).
    """
    store = release.config.output.original_store
    cube = load_cube(store, plan.cube_id, ["count"])
    bds = list(plan.breakdowns)
    if [str(d) for d in cube.dims] != [b.id for b in bds] or cube["count"].shape != tuple(len(b.codes) for b in bds):
        raise CubeguardError(
            f"cube {plan.cube_id!r} in {store} has other dimensions than the release config tabulates; "
            "rerun the release with --fresh"
        )
    after = np.asarray(cube["count"].values, dtype=np.int64)[np.ix_(*(b.bottom for b in bds))].ravel()
    before = undo_moves(after, moves)
    try:
        check_moves(before, after, moves)
    except MeasureConfigError as err:
        raise CubeguardError(
            f"cube {plan.cube_id!r} in {store} does not hold the units the pre-tabular steps moved ({err}); "
            "rerun the release with --fresh so that the cubes are tabulated again"
        ) from None
    return expand_all(before.reshape(plan.shape), bds)


def _aligned(
    left: Iterator[pa.RecordBatch], right: Iterator[pa.RecordBatch]
) -> Iterator[tuple[pa.RecordBatch, pa.RecordBatch]]:
    """Pairs of batches holding the same rows of two streams of record batches split differently."""
    a, b = _next(left), _next(right)
    while a is not None and b is not None:
        n = min(a.num_rows, b.num_rows)
        yield a.slice(0, n), b.slice(0, n)
        a = a.slice(n) if a.num_rows > n else _next(left)
        b = b.slice(n) if b.num_rows > n else _next(right)
    if a is not None or b is not None:
        raise CubeguardError(_STALE.format(what="they hold different numbers of records"))


def _next(batches: Iterator[pa.RecordBatch]) -> pa.RecordBatch | None:
    return next((b for b in batches if b.num_rows), None)


def _changed(before: pa.RecordBatch, after: pa.RecordBatch, columns: Sequence[str]) -> npt.NDArray[np.bool_]:
    """Rows where any of ``columns`` differs (a missing value equals only a missing value)."""
    out = np.zeros(before.num_rows, dtype=bool)
    for name in columns:
        x, y = _comparable(before.column(name), after.column(name))
        same = pc.or_(pc.fill_null(pc.equal(x, y), False), pc.and_(x.is_null(), y.is_null()))
        out |= ~same.to_numpy(zero_copy_only=False)
    return out


def _comparable(x: pa.Array, y: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The two columns as arrays ``pc.equal`` compares: dictionary indices when the dictionaries agree."""
    if pa.types.is_dictionary(x.type) and pa.types.is_dictionary(y.type) and x.dictionary.equals(y.dictionary):
        return x.indices, y.indices.cast(x.indices.type)
    x, y = (v.dictionary_decode() if pa.types.is_dictionary(v.type) else v for v in (x, y))
    if x.type == y.type:
        return x, y
    return x.cast(pa.string()), y.cast(pa.string())
