"""The cell key method as a release step: config checks, public parameters, the cube function."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import numpy.typing as npt
import xarray as xr
from pydantic import ValidationError

from cubeguard.ckm.keys import KeyScale
from cubeguard.ckm.magnitude import MagnitudeCells, NumPTable, perturbed_sums, read_num_ptable, separation
from cubeguard.ckm.magnitude.additive import AdditiveSums
from cubeguard.ckm.origins import origin_tables
from cubeguard.ckm.perturb import perturb_cells, perturb_cube
from cubeguard.ckm.ptable import PTable, PTableParams, create_cnt_ptable
from cubeguard.ckm.ptable_io import read_ptable
from cubeguard.cubes.values import input_names, stored_cells, sum_name, unperturbed
from cubeguard.errors import CubeguardError, InternalError
from cubeguard.methods.base import BoundsFunction, CellFunction, CubeFunction, Magnitude
from cubeguard.methods.bounds import BoolArray, Bounds, IntArray, by_value
from cubeguard.methods.cell_key.model import CellKeyStep, MagnitudeSpec
from cubeguard.methods.context import CheckContext, Problem
from cubeguard.methods.validation import problems


@functools.lru_cache(maxsize=16)
def ptable_of(params: PTableParams) -> PTable:
    """The p-table of ``params``, built once per process (cubes protected one by one reuse it)."""
    return create_cnt_ptable(params)


def ptable(step: CellKeyStep) -> PTable:
    """The p-table of a step whose secrets are resolved: read from its file or built from its parameters."""
    if step.ptable_file is not None:
        return read_ptable(step.ptable_file)
    params = step.ptable_params()
    if params is None:
        raise InternalError("the cell key step's secrets are not resolved; this is a bug in cubeguard")
    return ptable_of(params)


def prepare(step: CellKeyStep) -> CubeFunction:
    """Perturb a cube with the step's p-table (Handbook on SDC v2, 5.4), and the sums it holds (5.7).

    A cube tabulated with the sums of a column the step declares in ``magnitudes`` gets
    ``sum.<column>`` replaced by the published sums (:func:`magnitudes`, from the original counts,
    so the cell has the same value as in a flexible table) and loses the inputs of their
    perturbation (top contributions, extremes, non-zero key sums).
    """
    table = ptable(step)
    sums = magnitudes(step) if step.magnitudes else {}

    def perturb(cube: xr.Dataset) -> xr.Dataset:
        return perturb_cube(_perturbed_sums(cube, sums), table)

    return perturb


def _perturbed_sums(cube: xr.Dataset, sums: dict[str, Magnitude]) -> xr.Dataset:
    """``cube`` with the sums of each column of ``sums`` it holds unperturbed replaced by their published values."""
    scale = KeyScale.from_label(str(cube.attrs["key_scale"])) if sums else None
    for column in unperturbed(cube):
        if column not in sums or scale is None:
            continue
        published = _published(cube, column, sums[column], scale)
        inputs = [v for v in input_names(column, sums[column].top_k) if v in cube.data_vars]
        dims = cube[sum_name(column)].dims
        cube = cube.drop_vars(inputs).assign({sum_name(column): (dims, published)})
    return cube


def _published(cube: xr.Dataset, column: str, magnitude: Magnitude, scale: KeyScale) -> npt.NDArray[np.float64]:
    """The published sums of ``column`` in ``cube``: from its summed variables when they are enough (as tables do)."""
    if magnitude.sums is None:
        return magnitude.perturb(stored_cells(cube, column, scale)).reshape(cube["count"].shape)
    nz_key_sums = input_names(column, 0)[0]
    return magnitude.sums(
        cube["count"].values, cube[sum_name(column)].values, cube["key_sum"].values, cube[nz_key_sums].values, scale
    )


def cells(step: CellKeyStep) -> CellFunction:
    """The same perturbation on plain arrays of counts and record-key sums (for flexible tables)."""
    table = ptable(step)

    def perturb(
        counts: npt.NDArray[np.int64], key_sums: npt.NDArray[np.uint64], scale: KeyScale
    ) -> npt.NDArray[np.int64]:
        return perturb_cells(counts, key_sums, table, scale)

    return perturb


def bounds(step: CellKeyStep) -> BoundsFunction:
    """The originals a published count can come from: the support of the step's p-table (Handbook on SDC v2, 5.4).

    Every cell, totals included, is perturbed on its own, so margins are bounded like the interior
    (:func:`cubeguard.ckm.origins.origin_tables`; a zero stays zero, a count the p-table never
    publishes, e.g. 1..js, bounds nothing).
    """
    lo_of, hi_of, beyond = origin_tables(ptable(step))

    def origins(published: IntArray, interior: BoolArray) -> Bounds:
        return by_value(published, lo_of, hi_of, beyond)

    return origins


def magnitudes(step: CellKeyStep) -> dict[str, Magnitude]:
    """Per numeric column, its sums perturbed (cellKey's ``ck_params_nums``) and rounded to its ``unit``."""
    return {column: _magnitude(spec, read_num_ptable(spec.ptable_file)) for column, spec in step.magnitudes.items()}


def _magnitude(spec: MagnitudeSpec, table: NumPTable) -> Magnitude:
    """The step's perturbation of one column's sums; types ``mean`` and ``sum`` also from the summed arrays alone."""

    def perturb(cells: MagnitudeCells) -> npt.NDArray[np.float64]:
        # An empty cell publishes 0 whatever its key; most cells of a large table are empty. (cellKey's
        # top-k bug carries a count from cell to cell, empty ones included: that mode takes every cell.)
        live = cells.counts > 0 if spec.topk == "correct" else np.ones(cells.counts.size, dtype=bool)
        perturbed = np.zeros(cells.counts.size)
        perturbed[live] = perturbed_sums(_rows(cells, live), spec, table)
        return np.round(perturbed / spec.unit) * spec.unit

    if spec.type in ("mean", "sum"):
        return Magnitude(0, perturb, additive=True, sums=AdditiveSums.of(spec, table, spec.unit).published)
    return Magnitude(spec.top_k if spec.type == "top_contr" else 0, perturb)


def _rows(cells: MagnitudeCells, rows: npt.NDArray[np.bool_]) -> MagnitudeCells:
    """The cells of ``rows`` only."""
    return MagnitudeCells(**{f.name: getattr(cells, f.name)[rows] for f in dataclasses.fields(cells)})


def public(step: CellKeyStep) -> dict[str, object]:
    """Never D, V, pstay (secret) nor the p-tables or their paths; js says which counts never appear."""
    shown: dict[str, object] = {"js": step.js, "ptable_file": step.ptable_file is not None}
    return shown | ({"magnitudes": sorted(step.magnitudes)} if step.magnitudes else {})


def files(step: CellKeyStep) -> list[Path]:
    """The p-table files the step reads (their content is part of the run key and the audit)."""
    counts = [step.ptable_file] if step.ptable_file is not None else []
    return counts + [spec.ptable_file for spec in step.magnitudes.values()]


def check(step: CellKeyStep, ctx: CheckContext) -> list[Problem]:
    """The p-table file is read, or the parameters (references resolved) give a feasible p-table; no stacking."""
    found = _stacking(step, ctx) + _magnitude_problems(step)
    if step.ptable_file is not None:
        try:
            read_ptable(step.ptable_file)
        except OSError as exc:
            found.append(
                (
                    ("ptable_file",),
                    f"cannot read the p-table file {step.ptable_file} ({exc.strerror}); "
                    "give the path of an existing file, relative to the config",
                )
            )
        except CubeguardError as exc:
            found.append((("ptable_file",), str(exc)))
        return found
    try:
        params = step.ptable_params()
    except ValidationError as exc:
        return found + problems(exc)
    if params is not None:
        try:
            ptable_of(params)
        except CubeguardError as exc:
            found.append(((), f"no p-table exists for these parameters ({exc}); raise V or D, or lower js or pstay"))
    return found


def _magnitude_problems(step: CellKeyStep) -> list[Problem]:
    """Each numeric p-table is read and fits its parameters (table types, separation point); no ``mu_c``."""
    found: list[Problem] = []
    for column, spec in step.magnitudes.items():
        if spec.mu_c > 0:  # cellKey adds it to sensitive cells; a release marks none, so it would do nothing
            found.append((("magnitudes", column, "mu_c"), "mu_c protects sensitive cells, and cubeguard marks no cell "
                          "sensitive (there is no sensitivity rule); remove mu_c or set it to 0"))  # fmt: skip
        key = ("magnitudes", column, "ptable_file")
        try:
            separation(spec, read_num_ptable(spec.ptable_file))
        except OSError as exc:
            found.append((key, f"cannot read the numeric p-table {spec.ptable_file} ({exc.strerror}); give the path "
                          "of an existing file, relative to the config"))  # fmt: skip
        except CubeguardError as exc:
            found.append((key, str(exc)))
    return found


def _stacking(step: CellKeyStep, ctx: CheckContext) -> list[Problem]:
    if step.allow_stacking:
        return []
    for k, other, both in ctx.sharing():
        if isinstance(other, CellKeyStep):
            return [
                (
                    ("cubes",),
                    f"cube {both[0]!r} (and {len(both) - 1} more) is already perturbed by steps[{k}] "
                    f"({other.name}); restrict 'cubes' or set allow_stacking: true",
                )
            ]
    return []
