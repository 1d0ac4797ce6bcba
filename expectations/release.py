"""The release's gate step: the gate suites on every cube and the measures; the verdict as a step result.

Data Docs and the full result (``internal/gates.json``, one row per cube and expectation) stay internal.
"""

from __future__ import annotations

import json

import pandas as pd

from cubeguard.config.load import Release
from cubeguard.config.protection import additive_cubes
from cubeguard.errors import InternalError
from cubeguard.gates.attack import MISSED_COLUMN, RECOVERED_COLUMN
from cubeguard.pipeline.attack import read_attack
from cubeguard.pipeline.measure import cube_pairs, measures_file
from cubeguard.release.results import Gated
from expectations.gates import run_gates


def gate_release(release: Release) -> Gated:
    """Run the gates of ``release`` on its stores and measures table; write ``internal/gates.json``."""
    internal = release.config.output.internal
    measures = with_attack_columns(release, pd.read_parquet(measures_file(release)))
    additive = additive_cubes(release.config)  # their methods promise additive tables: additivity blocks
    result = run_gates(cube_pairs(release), measures, release.config.gates, internal / "gates", additive=additive)  # type: ignore[arg-type]
    rows = tuple(
        {
            "cube": o.cube,
            "expectation": o.expectation,
            "status": "error" if o.error else ("pass" if o.success else ("fail" if o.blocking else "warn")),
            "observed": str(o.observed),
            "required": o.threshold,
        }
        for o in result.outcomes
    )
    (internal / "gates.json").write_text(json.dumps(rows, indent=1, default=str))
    docs = str(result.docs_index) if result.docs_index else None
    return Gated(passed=result.passed, failures=tuple(result.failures()), rows=rows, docs=docs)


def with_attack_columns(release: Release, measures: pd.DataFrame) -> pd.DataFrame:
    """``measures`` with the attack step's findings per cube, when the release sets an attack gate."""
    if release.config.gates.max_recovered_by_attack is None:
        return measures
    report = read_attack(release)
    if report is None:
        raise InternalError(
            "the release sets gates.max_recovered_by_attack but no attack ran; this is a bug in cubeguard"
        )
    cubes = [str(c) for c in measures.index]
    return measures.assign(
        **{
            RECOVERED_COLUMN: [float(report.recovered(c)) for c in cubes],
            MISSED_COLUMN: [float(report.missed(c)) for c in cubes],
        }
    )
