"""Pre-tabular protection: swap the microdata once, then tabulate every cube from the result.

Each ``pre_tabular`` step (its method's package under :mod:`cubeguard.methods`) reads only
the columns it needs, sees the earlier steps' swaps, and writes ``internal/<name>_report.json``
(and ``.md`` when its method renders one):
units and persons swapped per level and per area, cases without a partner, and the effect on the
step's ``report_cubes`` (:mod:`cubeguard.pipeline.swap_effect`). The full microdata are then
streamed once, batch by batch, with the swapped columns put in, into an internal Parquet file. Row
order is kept, so swapped columns line up with the streamed batches.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from cubeguard.config.load import Release
from cubeguard.cubes.encode import population_mask
from cubeguard.errors import CubeguardError
from cubeguard.methods.base import MicrodataMethod, Swapped
from cubeguard.methods.context import TableSet
from cubeguard.methods.models import MicrodataStep
from cubeguard.methods.registry import MICRODATA_METHODS
from cubeguard.microdata.read import iter_batches
from cubeguard.pipeline.resolved_steps import resolved_step
from cubeguard.pipeline.swap_effect import cube_columns, cube_effects
from cubeguard.secrets import SecretResolver


def apply_pre_tabular(
    release: Release, resolver: SecretResolver | None = None, progress: Callable[[str, int], None] | None = None
) -> dict[str, Any]:
    """Run the configured pre-tabular steps; write the swapped microdata and internal reports.

    Returns a public summary: step names and the households and persons each swapped (no secret).
    """
    cfg = release.config
    if not cfg.pre_tabular:
        return {"steps": []}
    swapped: dict[str, pd.Series] = {}
    done = []
    for k, step in enumerate(cfg.pre_tabular):
        result = _run_step(release, step, f"pre_tabular[{k}]", resolver, swapped)
        swapped.update({c: result.data[c] for c in result.moved})
        done.append((step.name, result))
    _rewrite(release, swapped, cfg.output.swapped_microdata, progress)
    return {
        "steps": [name for name, _ in done],
        "households_swapped": [r.households for _, r in done],
        "persons_swapped": [r.persons for _, r in done],
    }


def _run_step(
    release: Release, step: MicrodataStep, where: str, resolver: SecretResolver | None, earlier: dict[str, pd.Series]
) -> Swapped:
    method = MICRODATA_METHODS[step.method]
    inp = release.config.input
    resolved = resolved_step(step, where, resolver).with_ids(inp.household_id, inp.person_id)
    resolved = resolved.with_tables(release_tables(release))
    seed = resolved.seed
    if not isinstance(seed, int) or seed < 0:  # the config check saw inline seeds; this is a reference
        raise CubeguardError(f"{where}.seed: the seed must be a non-negative integer; change the secret")
    columns = sorted({*method.columns(resolved), *cube_columns(release, step.report_cubes)})
    frame, selected = _read(release, step, columns, earlier)
    result = _apply_selected(method, frame, selected, resolved, seed, where)
    report = {"name": step.name, "method": step.method, **result.report}
    imputed = getattr(step, "imputed", None)  # a household column flagging imputed records, if the method has one
    report["cube_effects"] = cube_effects(release, step.report_cubes, frame, result.data, imputed)
    internal = release.config.output.internal
    internal.mkdir(parents=True, exist_ok=True)
    (internal / f"{step.name}_report.json").write_text(json.dumps(report, indent=2))
    if method.describe is not None:
        (internal / f"{step.name}_report.md").write_text(method.describe(report))
    return result


def release_tables(release: Release) -> TableSet:
    """The release's breakdowns and hypercubes, as a pre-tabular step that controls tables is told them."""
    cfg = release.config
    cubes = tuple((c.id, tuple(c.breakdowns)) for c in cfg.hypercubes)
    special = {n for n, p in cfg.populations.items() if p.unit == "households" or p.where}
    population_of = {c.id: c.population for c in cfg.hypercubes if c.population in special}
    homes = tuple(cfg.input.household_columns)
    return TableSet(release.breakdowns, cubes, population_of, dict(cfg.populations), cfg.input.household_ref, homes)


def _read(
    release: Release, step: MicrodataStep, columns: list[str], earlier: dict[str, pd.Series]
) -> tuple[pd.DataFrame, npt.NDArray[np.bool_] | None]:
    """The step's columns (earlier steps' swaps put in) and the rows its ``where`` selects."""
    selection: dict[str, list[str] | list[int]] = getattr(step, "where", {})
    names = sorted({*columns, *selection})
    frames = [batch.to_pandas() for batch in iter_batches(release.config.input, names)]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=names)
    for col, values in earlier.items():  # a later step sees the earlier steps' swaps
        if col in frame:
            frame[col] = values.to_numpy() if isinstance(values.dtype, np.dtype) else values.array
    if not selection:
        return frame, None
    chosen = pa.RecordBatch.from_pandas(frame[list(selection)], preserve_index=False)
    return frame, population_mask(chosen, selection, None)


def _apply_selected(
    method: MicrodataMethod[Any],
    frame: pd.DataFrame,
    selected: npt.NDArray[np.bool_] | None,
    step: MicrodataStep,
    seed: int,
    where: str,
) -> Swapped:
    """Apply the method to the selected rows only; the others keep their values."""
    if selected is None:
        return method.apply(frame, step, seed)
    hid = getattr(step, "unit_id", getattr(step, "household_id", None))
    if hid is not None:
        split = pd.Series(selected).groupby(frame[hid].to_numpy()).nunique() > 1
        if split.any():
            examples = ", ".join(map(str, split.index[split.to_numpy()][:3]))
            raise CubeguardError(
                f"{where}.where: the selection splits {int(split.sum())} households (e.g. {examples}); "
                "select on household-level columns"
            )
    rows = np.flatnonzero(selected)
    part = method.apply(frame.iloc[rows].reset_index(drop=True), step, seed)
    data = frame.copy(deep=False)
    for col in part.moved:
        column = frame[col].copy()
        column.iloc[rows] = part.data[col].to_numpy()
        data[col] = column
    return Swapped(data, part.moved, part.households, part.persons, part.report)


def _rewrite(
    release: Release, swapped: dict[str, pd.Series], target: Path, progress: Callable[[str, int], None] | None
) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    writer: pq.ParquetWriter | None = None
    offset = 0
    try:
        for batch in iter_batches(release.config.input, None):
            n = batch.num_rows
            for col, values in swapped.items():
                i = batch.schema.get_field_index(col)
                batch = batch.set_column(
                    i, batch.schema.field(i), _like(values.iloc[offset : offset + n], batch.column(i))
                )
            if writer is None:
                writer = pq.ParquetWriter(tmp, batch.schema, compression="zstd")
            writer.write_batch(batch)
            offset += n
            if progress:
                progress("swap", n)
    finally:
        if writer is not None:
            writer.close()
    tmp.replace(target)


def _like(values: pd.Series, like: pa.Array) -> pa.Array:
    """``values`` as an Arrow array of ``like``'s type; dictionary columns keep ``like``'s dictionary.

    So unswapped values are written back exactly as read (swap rate 0 gives the input back).
    """
    if pa.types.is_dictionary(like.type):
        dictionary = like.dictionary
        plain = _like(values, dictionary)
        indices = pc.index_in(plain, value_set=dictionary)
        if indices.null_count == plain.null_count:
            return pa.DictionaryArray.from_arrays(indices.cast(like.type.index_type), dictionary)
        return plain.dictionary_encode().cast(like.type)
    arr = pa.Array.from_pandas(values)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if arr.type == like.type:
        return arr
    try:
        return arr.cast(like.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return arr.cast(pa.string()).cast(like.type)
