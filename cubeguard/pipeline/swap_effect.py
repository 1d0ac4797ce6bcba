"""The effect of a pre-tabular swap on chosen hypercubes, for the step's internal report.

Each cube named in a step's ``report_cubes`` is tabulated from the microdata before and after the
step (only the columns the cubes need) and compared with :func:`cubeguard.measures.table.measure_cube`:
the information loss measures (RAD, Hellinger, ...), small cells unchanged, directly disclosive
cells, and the two success measures of record swapping of Frend et al. (2011), section 4 (share of
real attribute disclosures removed, share of apparent ones that are false). Real cases are those
not created by imputation: when the step names an ``imputed`` column, the cube of imputed records
is tabulated too. The entropy risk ``r#`` of the interior cells (the Handbook's table) uses the
unit transitions of Handbook on SDC v2, 5.9: persons in cell ``i`` before the swap and ``j`` after
(:mod:`cubeguard.pipeline.unit_moves`); ``unit_transitions@interior`` is 1 when it does, and 0 when
the swap moved persons into or out of the cube's population, where cell-value transitions are kept.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa

from cubeguard.ckm.keys import KeyScale
from cubeguard.config.load import Release
from cubeguard.cubes.tabulate import Tabulator
from cubeguard.measures.table import DEFAULT_MEASURES, MeasureSpec, measure_cube
from cubeguard.measures.transitions import Transitions
from cubeguard.pipeline.tabulation import plans_for
from cubeguard.pipeline.unit_moves import interior_cells, paired_rows, unit_transitions

#: Every cell and the interior; the default measures plus the swapping success measures.
EFFECT_MEASURES = MeasureSpec(measures=(*DEFAULT_MEASURES, "swap_success"), scopes=("cube", "interior"))
_KEY = "__swap_effect_key"  # counts only: record keys are not needed and never read


def _tabulator(release: Release, cube_ids: list[str]) -> Tabulator:
    cfg = release.config
    return Tabulator(plans_for(release, cube_ids), cfg.populations, KeyScale(), _KEY, cfg.input.household_ref)


def cube_columns(release: Release, cube_ids: list[str]) -> list[str]:
    """Microdata columns the cubes need, with the person id that pairs records (none without cubes)."""
    if not cube_ids:
        return []
    person = [release.config.input.person_id] if release.config.input.person_id else []
    return sorted({*(c for c in _tabulator(release, cube_ids).columns if c != _KEY), *person})


def cube_effects(
    release: Release, cube_ids: list[str], before: pd.DataFrame, after: pd.DataFrame, imputed: str | None = None
) -> dict[str, dict[str, float | None]]:
    """Measures of each cube tabulated from ``after`` against it tabulated from ``before``.

    Keys are :func:`measure_cube`'s (``"rad@interior"``, ``"swap_removed_share@cube"``, ...) and
    ``"unit_transitions@interior"``; ``None`` stands for a measure that is undefined on the cube
    (no small cell, no disclosure). ``imputed``: the step's column flagging imputed records
    (true/1; missing is false), whose cube ``swap_success`` needs to count only real cases.
    """
    if not cube_ids:
        return {}
    original, swapped = _tabulate(release, cube_ids, before), _tabulate(release, cube_ids, after)
    imputed_tab = None if imputed is None else _tabulate(release, cube_ids, before[_flagged(before[imputed])])
    moves = _all_transitions(release, original, before, after)
    out: dict[str, dict[str, float | None]] = {}
    for c, plan in enumerate(original.plans):
        attrs: dict[str, object] = {"cube_id": plan.cube_id}
        imputed_cube = None if imputed_tab is None else imputed_tab.cube(c, attrs)
        o, s = original.cube(c, attrs), swapped.cube(c, attrs)
        measures = measure_cube(o, s, EFFECT_MEASURES, transitions=moves[c], imputed=imputed_cube)
        measures["unit_transitions@interior"] = float(moves[c] is not None)
        out[plan.cube_id] = {k: (float(v) if math.isfinite(v) else None) for k, v in measures.items()}
    return out


def _all_transitions(
    release: Release, tab: Tabulator, before: pd.DataFrame, after: pd.DataFrame
) -> list[Transitions | None]:
    """Unit transitions between the interior cells of each of ``tab``'s cubes (None where undefined)."""
    cfg = release.config
    rows = paired_rows(before, after, cfg.input.person_id)
    b, a = _batch(tab, before), _batch(tab, after.iloc[rows])
    out: list[Transitions | None] = []
    for plan in tab.plans:
        cells = interior_cells(plan, cfg.populations, cfg.input.household_ref, b)
        moved = interior_cells(plan, cfg.populations, cfg.input.household_ref, a)
        out.append(unit_transitions(cells, moved, int(np.prod(plan.shape, dtype=np.int64))))
    return out


def _flagged(column: pd.Series) -> npt.NDArray[np.bool_]:
    """True where a record is flagged (true or non-zero); missing values are not flagged."""
    return np.asarray(column.fillna(False), dtype=bool)


def _batch(tab: Tabulator, frame: pd.DataFrame) -> pa.RecordBatch:
    columns = [c for c in tab.columns if c != _KEY]
    return pa.RecordBatch.from_pandas(frame[columns], preserve_index=False)


def _tabulate(release: Release, cube_ids: list[str], frame: pd.DataFrame) -> Tabulator:
    tab = _tabulator(release, cube_ids)
    tab.add_batch(_batch(tab, frame).append_column(_KEY, pa.array(np.zeros(len(frame)))))
    return tab
