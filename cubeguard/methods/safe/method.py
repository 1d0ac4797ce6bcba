"""SAFE as a release step: columns read, config checks, public parameters, apply and its report."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from cubeguard.cubes.encode import population_mask
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.errors import InternalError
from cubeguard.methods.base import Swapped
from cubeguard.methods.context import CheckContext, Problem, TableSet
from cubeguard.methods.safe.controlled import Controlled, Dimension, build
from cubeguard.methods.safe.deviations import cell_identity, deviation_tables
from cubeguard.methods.safe.elementary import POPULATION, Elementary, elementary
from cubeguard.methods.safe.model import SafeStep
from cubeguard.methods.safe.rebuild import rebuilt, relocate
from cubeguard.methods.safe.search import Outcome, Settings, search


def _tables(step: SafeStep) -> TableSet:
    tables = step.release_tables
    if tables is None:
        raise InternalError("the safe step ran without the release's tables (with_tables); this is a bug in cubeguard")
    return tables


#: A controlled table: the population it counts (``None``: every person record) and its breakdowns.
Table = tuple[str | None, list[Breakdown]]


def controlled_tables(step: SafeStep, tables: TableSet) -> list[Table]:
    """The controlled tables: ``step.tables`` (over every person), or every hypercube with its population."""
    if step.tables is not None:
        return [(None, [tables.breakdowns[b] for b in t]) for t in step.tables]
    return [(tables.population_of.get(cid), [tables.breakdowns[b] for b in bs]) for cid, bs in tables.cubes]


def used_breakdowns(step: SafeStep, tables: TableSet) -> list[Breakdown]:
    """Every breakdown of the release's cubes and of the controlled tables: they fix the finest categories."""
    ids = dict.fromkeys([*(b for _, bs in tables.cubes for b in bs), *(b for t in step.tables or [] for b in t)])
    return [tables.breakdowns[b] for b in ids]


def _population_columns(tables: TableSet) -> set[str]:
    """Columns that decide the populations the release's cubes count (filters, the reference-person flag)."""
    found: set[str] = set()
    for name in set(tables.population_of.values()):
        pop = tables.populations[name]
        found |= set(pop.where)
        if pop.unit == "households" and tables.household_ref:
            found.add(tables.household_ref)
    return found


def columns(step: SafeStep) -> list[str]:
    """Microdata columns the step reads: every breakdown's, and those that decide the cubes' populations."""
    if step.release_tables is None:
        return []
    tables = step.release_tables
    return sorted({bd.column for bd in used_breakdowns(step, tables)} | _population_columns(tables))


def _members(frame: pd.DataFrame, tables: TableSet) -> dict[str, npt.NDArray[np.bool_]]:
    """Per population the cubes count (other than every person), whether each record is counted in it."""
    batch = pa.RecordBatch.from_pandas(frame[sorted(_population_columns(tables))], preserve_index=False)
    found = {}
    for name in sorted(set(tables.population_of.values())):
        pop = tables.populations[name]
        found[name] = population_mask(batch, pop.where, tables.household_ref if pop.unit == "households" else None)
    return found


def apply(frame: pd.DataFrame, step: SafeStep, seed: int) -> Swapped:
    """Protect ``frame`` with SAFE and describe what changed."""
    clock = time.perf_counter()
    tables = _tables(step)
    el = elementary(frame, used_breakdowns(step, tables), _members(frame, tables))
    controlled = controlled_tables(step, tables)
    ctl = build([_dimensions(el, table) for table in controlled])
    rng = np.random.default_rng(seed)
    settings = Settings(
        start=(step.start.one, step.start.other),
        target=(step.target.one, step.target.other),
        correction_steps=step.correction_steps,
        window=step.window,
        time_limit=step.time_limit,
        max_tightenings=step.max_tightenings,
    )
    homes = np.isin(np.array(el.columns, dtype=object), list(tables.household_columns))
    outcome = search(el.cats, el.counts, ctl, settings, rng, fixed=el.fixed | homes)  # households stay whole
    if np.any((outcome.counts == 1) | (outcome.counts == 2)):
        raise InternalError("SAFE left an elementary cell of 1 or 2; this is a bug in cubeguard")
    final = relocate(el.cell, outcome.log, el.counts.size, rng)
    data = rebuilt(frame, tuple(c for c in el.moved_columns if c not in tables.household_columns), el.cell, final)
    moved = int(np.count_nonzero(final != el.cell))
    report = _report(el, controlled, ctl, outcome, moved, time.perf_counter() - clock)
    return Swapped(data=data, moved=list(el.moved_columns), households=None, persons=moved, report=report)


def _dimensions(el: Elementary, table: Table) -> list[Dimension]:
    population, bds = table
    dims = [
        Dimension(el.columns.index(bd.column), el.positions[bd.id], bd.lo.astype(np.int64), bd.hi.astype(np.int64))
        for bd in bds
    ]
    if population is not None:  # one code, its members: the table counts only them
        one = np.zeros(1, dtype=np.int64)
        key = POPULATION + population
        dims.append(Dimension(el.columns.index(key), el.positions[key], one, one + 1))
    return dims


def _report(
    el: Elementary,
    controlled: Sequence[Table],
    ctl: Controlled,
    outcome: Outcome,
    moved: int,
    seconds: float,
) -> dict[str, Any]:
    """The step's internal report: sizes, the bound schedule reached and the deviation tables."""
    names = sorted({bd.classification.variable for _, table in controlled for bd in table})
    names += sorted({POPULATION + p for p, _ in controlled if p is not None})
    sizes = {bd.classification.variable: len(bd.classification.codes) for _, table in controlled for bd in table}
    one = np.zeros(1, dtype=np.int64)
    ident = cell_identity(
        [
            [(names.index(bd.classification.variable), _code_ids(bd)) for bd in table]
            + ([(names.index(POPULATION + p), one)] if p is not None else [])
            for p, table in controlled
        ],
        [sizes.get(n, 1) for n in names],
    )
    final = outcome.final
    unsafe = int(np.count_nonzero((el.counts == 1) | (el.counts == 2)))
    return {
        "records": int(el.cell.size),
        "records_moved": moved,
        "stopped_by": outcome.stopped_by,
        "moves": int(outcome.log.shape[0]),
        "variables": list(el.columns),
        "elementary_cells": int(el.counts.size),
        "unsafe_cells_before": unsafe,
        "cells_emptied": int(np.count_nonzero((el.counts > 0) & (outcome.counts == 0))),
        "controlled_tables": len(controlled),
        "controlled_cells": ctl.n_cells,
        "final_bounds": {"one": final.bound_one, "other": final.bound_other, "correction_step": final.correction_step},
        "schedule": [vars(s) for s in outcome.schedule],
        "deviations": deviation_tables(ident, outcome.original, outcome.deviation, ctl.dims),
        "seconds": round(seconds, 3),
    }


def _code_ids(bd: Breakdown) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Classification index of each selected code; -1 for the total."""
    codes = np.array(bd.selected, dtype=np.int64)
    codes[np.array(bd.depths) == 0] = -1
    return codes


def public(step: SafeStep) -> dict[str, object]:
    """Everything but the seed: the bounds and schedule describe the published tables' quality."""
    return {
        "tables": step.tables,
        "start": step.start.model_dump(),
        "target": step.target.model_dump(),
        "correction_steps": step.correction_steps,
        "window": step.window,
        "time_limit": step.time_limit,
        "max_tightenings": step.max_tightenings,
    }


def check(step: SafeStep, ctx: CheckContext) -> list[Problem]:
    """SAFE runs last, over breakdowns the config declares."""
    problems: list[Problem] = []
    if ctx.index != len(ctx.steps) - 1:
        problems.append(
            (
                (),
                "safe must be the last pre_tabular step: a later step would change the microdata again and could "
                "bring back counts of 1 and 2; move it to the end of pre_tabular",
            )
        )
    for i, table in enumerate(step.tables or []):
        for j, bid in enumerate(table):
            if bid not in ctx.breakdowns:
                known = sorted(ctx.breakdowns)
                listed = ", ".join(known[:8]) + (", ..." if len(known) > 8 else "")
                problems.append((("tables", i, j), f"unknown breakdown {bid!r}; known: {listed}"))
        if len(set(table)) != len(table):
            problems.append((("tables", i), "a breakdown appears twice in this table; list each once"))
    return problems
