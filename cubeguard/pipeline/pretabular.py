"""Pre-tabular protection: swap the microdata once, then tabulate every cube from the result.

Only the columns the swap needs are held in memory; the full microdata are then streamed once,
batch by batch, with the swapped geography and carry-along columns put in, into an internal
Parquet file. Row order is kept, so swapped columns line up with the streamed batches.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from cubeguard.config.load import Release
from cubeguard.config.models import TargetedSwapStep
from cubeguard.config.secrets import SecretReader, resolve_number
from cubeguard.errors import CubeguardError
from cubeguard.microdata.read import iter_batches
from cubeguard.swap.params import TargetedSwapParams
from cubeguard.swap.targeted import targeted_swap


def apply_pre_tabular(
    release: Release, prefect_reader: SecretReader | None = None, progress: Callable[[str, int], None] | None = None
) -> dict[str, Any]:
    """Run the configured pre-tabular steps; write the swapped microdata and an internal report."""
    cfg = release.config
    if not cfg.pre_tabular:
        return {"steps": []}
    summaries = []
    swapped: dict[str, pa.Array] = {}
    for k, step in enumerate(cfg.pre_tabular):
        columns, result = _swap(release, step, f"pre_tabular[{k}]", prefect_reader, swapped)
        swapped.update({c: pa.array(result.data[c].to_numpy(dtype=object)) for c in columns})
        summaries.append(_summary(step, result, cfg.output.internal))
    _rewrite(release, swapped, cfg.output.swapped_microdata, progress)
    return {"steps": [s["name"] for s in summaries], "households_swapped": [s["households_swapped"] for s in summaries]}


def _swap(
    release: Release, step: TargetedSwapStep, where: str, reader: SecretReader | None, earlier: dict[str, pa.Array]
) -> tuple[list[str], Any]:
    hid = step.household_id or release.config.input.household_id
    if hid is None:
        raise CubeguardError(f"{where}: swapping needs a household id; set input.household_id or {where}.household_id")
    similar_cols = {c for profile in step.similar for c in profile}
    needed = sorted({hid, *step.hierarchy, *step.risk_variables, *step.carry_along, *similar_cols})
    frame = pd.concat([b.to_pandas() for b in iter_batches(release.config.input, needed)], ignore_index=True)
    for col, values in earlier.items():  # a later step sees the earlier steps' swaps
        if col in frame:
            frame[col] = values.to_pandas()
    for col, cap in step.caps.items():
        frame[f"{col}__cap"] = pd.to_numeric(frame[col]).clip(upper=cap)
    similar = tuple(tuple(f"{c}__cap" if c in step.caps else c for c in profile) for profile in step.similar)
    params = TargetedSwapParams(
        household_id=hid,
        hierarchy=tuple(step.hierarchy),
        similar=similar,
        risk_variables=tuple(step.risk_variables),
        carry_along=tuple(step.carry_along),
        swap_rate=float(resolve_number(step.swap_rate, f"{where}.swap_rate", reader)),
        k_anonymity=int(resolve_number(step.k_anonymity, f"{where}.k_anonymity", reader)),
    )
    result = targeted_swap(frame, params, seed=int(resolve_number(step.seed, f"{where}.seed", reader)))
    return [*step.hierarchy, *step.carry_along], result


def _summary(step: TargetedSwapStep, result: Any, internal: Path) -> dict[str, Any]:
    """Write the step's internal report (counts per level, no-donor cases); return a public summary."""
    internal.mkdir(parents=True, exist_ok=True)
    report = {
        "name": step.name,
        "households_swapped": result.n_households_swapped,
        "persons_swapped": result.n_persons_swapped,
        "must_swap_households_per_level": {str(k): int(v) for k, v in result.must_swap_counts.items()},
        "swapped_households_per_level": {str(k): int(v) for k, v in result.swap_level.value_counts().items()},
        "no_donor": result.no_donor.reset_index().astype(str).to_dict("records"),
    }
    (internal / f"{step.name}_report.json").write_text(json.dumps(report, indent=2))
    return report


def _rewrite(
    release: Release, swapped: dict[str, pa.Array], target: Path, progress: Callable[[str, int], None] | None
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
                    i, col, values.slice(offset, n).cast(pa.string()).cast(batch.schema.field(col).type)
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
