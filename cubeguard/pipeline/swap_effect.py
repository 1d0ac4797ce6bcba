"""The effect of a pre-tabular swap on chosen hypercubes, for the step's internal report.

Each cube named in a step's ``report_cubes`` is tabulated from the microdata before and after the
step (only the columns the cubes need) and compared with :func:`cubeguard.measures.table.measure_cube`:
the information loss measures (RAD, Hellinger, ...), small cells unchanged, directly disclosive
cells, and the two success measures of record swapping of Frend et al. (2011), section 4 (share of
real attribute disclosures removed, share of apparent ones that are false).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa

from cubeguard.ckm.keys import KeyScale
from cubeguard.config.load import Release
from cubeguard.cubes.tabulate import Tabulator
from cubeguard.measures.table import DEFAULT_MEASURES, MeasureSpec, measure_cube
from cubeguard.pipeline.tabulation import plans_for

#: Every cell and the interior; the default measures plus the swapping success measures.
EFFECT_MEASURES = MeasureSpec(measures=(*DEFAULT_MEASURES, "swap_success"), scopes=("cube", "interior"))
_KEY = "__swap_effect_key"  # counts only: record keys are not needed and never read


def _tabulator(release: Release, cube_ids: list[str]) -> Tabulator:
    cfg = release.config
    return Tabulator(plans_for(release, cube_ids), cfg.populations, KeyScale(), _KEY, cfg.input.household_ref)


def cube_columns(release: Release, cube_ids: list[str]) -> list[str]:
    """Microdata columns the cubes need (none without cubes)."""
    return [c for c in _tabulator(release, cube_ids).columns if c != _KEY] if cube_ids else []


def cube_effects(
    release: Release, cube_ids: list[str], before: pd.DataFrame, after: pd.DataFrame
) -> dict[str, dict[str, float | None]]:
    """Measures of each cube tabulated from ``after`` against it tabulated from ``before``.

    Keys are :func:`measure_cube`'s (``"rad@interior"``, ``"swap_removed_share@cube"``, ...);
    ``None`` stands for a measure that is undefined on the cube (no small cell, no disclosure).
    """
    if not cube_ids:
        return {}
    original, swapped = _tabulate(release, cube_ids, before), _tabulate(release, cube_ids, after)
    out: dict[str, dict[str, float | None]] = {}
    for c, plan in enumerate(original.plans):
        attrs: dict[str, object] = {"cube_id": plan.cube_id}
        measures = measure_cube(original.cube(c, attrs), swapped.cube(c, attrs), EFFECT_MEASURES)
        out[plan.cube_id] = {k: (float(v) if math.isfinite(v) else None) for k, v in measures.items()}
    return out


def _tabulate(release: Release, cube_ids: list[str], frame: pd.DataFrame) -> Tabulator:
    tab = _tabulator(release, cube_ids)
    columns = [c for c in tab.columns if c != _KEY]
    batch = pa.RecordBatch.from_pandas(frame[columns], preserve_index=False)
    tab.add_batch(batch.append_column(_KEY, pa.array(np.zeros(len(frame)))))
    return tab
