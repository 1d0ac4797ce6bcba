"""Tabulation: many hypercubes from one streaming pass over the microdata.

Each batch of records is encoded once per breakdown, then a single numba kernel adds every record
to the bottom cells of every cube (``count`` and the exact ``key_sum`` of record keys; see
``cubeguard.ckm.keys``). Totals and subtotals come from the bottom cells afterwards
(``cubeguard.cubes.margins``), never from re-reading. Accumulators of separate passes (threads,
Dask partitions) merge by addition, so the result does not depend on how the records are split.

A cube that publishes the sums of numeric columns (``CubePlan.sums``) also accumulates, per column,
what the cell key method for magnitudes needs (:mod:`cubeguard.cubes.values`, the flexible tables'
implementation); records rank by their row in the tabulation source (``first_row`` on), as in the
tables' key store, so that partial tabulators merge into the single pass's top contributions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import xarray as xr

from cubeguard.ckm.keys import KeyScale
from cubeguard.cubes.encode import encode_batch, population_mask
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.cubes.kernels import Encoded, Layout, cell_indices, scatter_by_cube, scatter_by_records
from cubeguard.cubes.margins import expand_all
from cubeguard.cubes.model import make_cube
from cubeguard.cubes.spec import PopulationSpec
from cubeguard.cubes.values import (
    Values,
    add_indexed,
    empty_values,
    merge_values,
    stored_variables,
    value_margins,
    whole_numbers,
)
from cubeguard.errors import CubeguardError

PRIVATE_BYTES = 256 * 2**20


@dataclass(frozen=True)
class CubePlan:
    """What to tabulate for one hypercube."""

    cube_id: str
    breakdowns: tuple[Breakdown, ...]
    population: str
    #: Numeric columns whose sums the cube publishes, each with the top contributions its perturbation reads.
    sums: tuple[tuple[str, int], ...] = ()

    @property
    def shape(self) -> tuple[int, ...]:
        """Bottom-cell shape of the cube."""
        return tuple(b.n_bottom for b in self.breakdowns)


class Tabulator:
    """Accumulates the bottom cells of many cubes over record batches."""

    def __init__(
        self,
        plans: list[CubePlan],
        populations: dict[str, PopulationSpec],
        key_scale: KeyScale,
        key_column: str,
        household_ref: str | None,
    ) -> None:
        self.plans = plans
        self.populations = populations
        self.key_scale = key_scale
        self.key_column = key_column
        self.household_ref = household_ref
        self.breakdowns = sorted({b.id: b for p in plans for b in p.breakdowns}.values(), key=lambda b: b.id)
        row = {b.id: k for k, b in enumerate(self.breakdowns)}
        self.pop_names = sorted({p.population for p in plans})
        max_dims = max(len(p.breakdowns) for p in plans)
        self.cube_dims = np.full((len(plans), max_dims), -1, dtype=np.int32)
        self.strides = np.zeros((len(plans), max_dims), dtype=np.int64)
        sizes = [int(np.prod(p.shape, dtype=np.int64)) for p in plans]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        for c, plan in enumerate(plans):
            for d, bd in enumerate(plan.breakdowns):
                self.cube_dims[c, d] = row[bd.id]
                self.strides[c, d] = int(np.prod(plan.shape[d + 1 :], dtype=np.int64))
        self.cube_pop = np.array([self.pop_names.index(p.population) for p in plans], dtype=np.int32)
        self.counts = np.zeros(int(sum(sizes)), dtype=np.int64)
        self.key_sums = np.zeros(int(sum(sizes)), dtype=np.uint64)
        self.bad = np.zeros(len(plans), dtype=np.int64)
        self.records = 0
        self.first_row = 0  # the source row of this tabulator's first record (a partition's offset)
        self.values: dict[tuple[int, str], Values] = {
            (c, column): empty_values(plan.shape, top_k) for c, plan in enumerate(plans) for column, top_k in plan.sums
        }

    @property
    def columns(self) -> list[str]:
        """Microdata columns a batch must contain."""
        cols = {b.column for b in self.breakdowns} | {self.key_column} | {column for _, column in self.values}
        for name in self.pop_names:
            cols |= set(self.populations[name].where)
            if self.populations[name].unit == "households" and self.household_ref:
                cols.add(self.household_ref)
        return sorted(cols)

    def add_batch(self, batch: pa.RecordBatch) -> None:
        """Add one batch of records to every cube."""
        n = batch.num_rows
        if n == 0:
            return
        enc = encode_batch(batch, self.breakdowns)
        masks = np.empty((len(self.pop_names), n), dtype=np.bool_)
        for k, name in enumerate(self.pop_names):
            pop = self.populations[name]
            ref = self.household_ref if pop.unit == "households" else None
            masks[k] = population_mask(batch, pop.where, ref)
        keys = np.ascontiguousarray(batch.column(self.key_column).to_numpy(zero_copy_only=False), dtype=np.float64)
        scale, decimal = self.key_scale.numerator_scale()
        parts = self._record_parts()
        encoded = (enc.raw, enc.column_of, enc.first, enc.luts, enc.lens)
        layout = (self.cube_dims, self.strides, self.offsets, self.cube_pop)
        records = (masks, keys, scale, decimal)
        if parts > 1:
            scatter_by_records(encoded, layout, records, self.counts, self.key_sums, self.bad, parts)
        else:
            scatter_by_cube(encoded, layout, records, self.counts, self.key_sums, self.bad)
        if self.values:
            self._add_values(batch, encoded, layout, masks)
        self.records += n

    def _add_values(
        self, batch: pa.RecordBatch, encoded: Encoded, layout: Layout, masks: npt.NDArray[np.bool_]
    ) -> None:
        """Add the batch's records to the value accumulators of the cubes that sum columns."""
        keys = self.key_scale.to_fixed(batch.column(self.key_column).to_numpy(zero_copy_only=False))
        cells = np.empty(batch.num_rows, dtype=np.int64)
        columns: dict[str, npt.NDArray[np.float64]] = {}
        for (c, column), acc in self.values.items():
            if column not in columns:
                columns[column] = whole_numbers(column, batch.column(column), f"summed by cube {self.plans[c].cube_id}")
            cell_indices(encoded, layout, masks, c, cells)
            add_indexed(acc, cells, columns[column], keys, self.first_row + self.records)

    def _record_parts(self) -> int:
        """Threads to split records over (1: threads own whole cubes instead).

        With fewer cubes than threads, owning cubes would leave threads idle; splitting the
        records costs one private copy of the accumulators per thread, allowed up to 256 MB.
        """
        threads = numba.get_num_threads()
        private = threads * self.counts.size * 16
        return threads if len(self.plans) < threads and private <= PRIVATE_BYTES else 1

    def merge(self, other: Tabulator) -> None:
        """Add another tabulator's accumulators (same plans) into this one."""
        self.counts += other.counts
        self.key_sums += other.key_sums
        self.bad += other.bad
        self.records += other.records
        for key, acc in self.values.items():
            merge_values(acc, other.values[key])

    def bottom(self, c: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        """Bottom-cell counts and key sums of cube number ``c``."""
        plan = self.plans[c]
        start = int(self.offsets[c])
        size = int(np.prod(plan.shape, dtype=np.int64))
        return (
            self.counts[start : start + size].reshape(plan.shape),
            self.key_sums[start : start + size].reshape(plan.shape),
        )

    def cube(self, c: int, attrs: dict[str, object]) -> xr.Dataset:
        """The full cube number ``c`` with every total and subtotal."""
        if self.bad[c]:
            plan = self.plans[c]
            raise CubeguardError(
                f"cube {plan.cube_id}: {self.bad[c]} record(s) have codes outside the classification; validate the microdata first"
            )
        counts, key_sums = self.bottom(c)
        bds = list(self.plans[c].breakdowns)
        cube = make_cube(
            bds, expand_all(counts, bds), expand_all(key_sums, bds), {**attrs, "key_scale": self.key_scale.label}
        )
        for column, top_k in self.plans[c].sums:
            cells = value_margins(self.values[(c, column)], bds, expand_all)
            dims = [b.id for b in bds]
            cube = cube.assign({name: (dims, a) for name, a in stored_variables(cells, column, top_k).items()})
        return cube
