"""Validate microdata batch by batch and report every broken rule once.

The report names, per (column, rule): how many rows fail and up to 10 sample rows; it is written in
full to a JSON file. A failure raises :class:`MicrodataInvalid` (one sentence; the CLI exits 2) and
nothing is written to the output store.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pandera.errors as pe
import pyarrow as pa

from cubeguard.config.load import Release
from cubeguard.errors import CubeguardError
from cubeguard.microdata.read import available_columns, iter_batches
from cubeguard.release.results import Validated
from schemas.households import HouseholdChecker
from schemas.microdata import microdata_schema

SAMPLES = 10


class MicrodataInvalid(CubeguardError):
    """The microdata broke one or more rules; ``report`` holds them all."""

    def __init__(self, report: ValidationReport, report_file: Path | None) -> None:
        self.report = report
        self.report_file = report_file
        first = report.failures[0]
        where = f"; full report in {report_file}" if report_file else ""
        super().__init__(
            f"microdata failed validation: {len(report.failures)} rule(s) broken, first: column {first['column']!r} "
            f"rule {first['rule']!r} fails on {first['count']} row(s){where}; correct the input and run again"
        )


@dataclass
class ValidationReport:
    """Failures by (column, rule), with counts and sample rows."""

    records: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    _index: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict, repr=False)

    def add(self, column: str, rule: str, count: int, samples: list[dict[str, Any]]) -> None:
        """Record ``count`` failures of ``rule`` on ``column`` with (up to 10 in all) sample rows."""
        entry = self._index.get((column, rule))
        if entry is None:
            entry = {"column": column, "rule": rule, "count": 0, "samples": []}
            self._index[(column, rule)] = entry
            self.failures.append(entry)
        entry["count"] += int(count)
        room = SAMPLES - len(entry["samples"])
        entry["samples"].extend({str(k): _plain(v) for k, v in row.items()} for row in samples[:room])

    @property
    def ok(self) -> bool:
        """True when no rule failed."""
        return not self.failures

    def to_json(self) -> str:
        """The whole report as JSON."""
        return json.dumps({"records": self.records, "failures": self.failures}, indent=2, default=str)


def _plain(value: Any) -> Any:
    """A JSON-native copy of a sample value (numpy scalars become Python ones, NaN becomes None)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


def validate_microdata(
    release: Release,
    report_file: Path | None = None,
    batch_size: int = 1_000_000,
    progress: Callable[[int], None] | None = None,
) -> ValidationReport:
    """Check the release's microdata against its schema; raise :class:`MicrodataInvalid` on failure."""
    cfg = release.config
    schema = microdata_schema(release)
    present = set(available_columns(cfg.input))
    missing = [c for c in schema.columns if c not in present]
    if missing:
        raise CubeguardError(
            f"microdata has no column {missing[0]!r} (the config's variables need it); rename the column or fix the config"
        )
    report = ValidationReport()
    hh_cols = [c for c in cfg.input.household_columns if c in present]
    counted = any(p.unit == "households" for p in cfg.populations.values())
    ref = cfg.input.household_ref if counted and cfg.input.household_ref in present else None
    households = HouseholdChecker(cfg.input.household_id, hh_cols, ref) if cfg.input.household_id else None
    pids: list[np.ndarray] = []
    columns = sorted(set(schema.columns) | set(hh_cols) | ({ref} if ref and households else set()))
    for batch in iter_batches(cfg.input, columns, batch_size):
        offset = report.records
        frame = _to_pandas(batch, offset)
        _check_batch(schema, frame, report)
        if cfg.input.person_id:
            pids.append(frame[cfg.input.person_id].to_numpy())
        if households is not None:
            households.add(frame)
        report.records += batch.num_rows
        if progress:
            progress(batch.num_rows)
    if cfg.input.person_id:
        _check_unique(cfg.input.person_id, pids, report)
    if households is not None:
        households.finish(report)
    if not report.ok:
        if report_file is not None:
            report_file.parent.mkdir(parents=True, exist_ok=True)
            report_file.write_text(report.to_json(), encoding="utf-8")
        raise MicrodataInvalid(report, report_file)
    if report.records == 0:  # all-zero cubes would pass every gate and publish nothing of use
        raise CubeguardError(
            f"microdata {cfg.input.microdata} has no records; point input.microdata at the census file"
        )
    return report


def _to_pandas(batch: pa.RecordBatch, offset: int) -> pd.DataFrame:
    frame = batch.to_pandas()
    frame.index = pd.RangeIndex(offset, offset + batch.num_rows)
    return frame


def _check_batch(schema: Any, frame: pd.DataFrame, report: ValidationReport) -> None:
    try:
        schema.validate(frame, lazy=True)
    except pe.SchemaErrors as exc:
        cases = exc.failure_cases
        for (column, check), grp in cases.groupby(["column", "check"], dropna=False, sort=False):
            rows = [i for i in grp["index"].tolist() if i is not None and not pd.isna(i)][:SAMPLES]
            samples = (
                frame.loc[rows].reset_index(names="row").to_dict("records")
                if rows
                else grp.head(SAMPLES).to_dict("records")
            )
            report.add(str(column), str(check), len(grp), samples)


def _check_unique(column: str, chunks: list[np.ndarray], report: ValidationReport) -> None:
    ids = np.concatenate(chunks) if chunks else np.array([])
    order = np.argsort(ids, kind="stable")
    dup = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if dup.size:
        rows = np.sort(order[dup + 1])[:SAMPLES]
        report.add(column, "unique person id", dup.size, [{"row": int(r), column: ids[r]} for r in rows])


def validate_release(release: Release, progress: Callable[[str, int], None] | None = None) -> Validated:
    """The release's validate step: every rule checked, the full report kept internal on failure."""
    rep = validate_microdata(
        release,
        release.config.output.validation_report,
        progress=(lambda n: progress("validate", n)) if progress else None,
    )
    return Validated(records=rep.records)
