"""The release's report step: the internal HTML report, its facts, its sections per method and drill-down.

The report is written after the gates and before publishing, under the release id the run was
prepared with (:func:`cubeguard.release.run.prepare`), so the archived page names its release.
The drill-down by breakdown and level reads the pairs the measure step measures
(:func:`~cubeguard.pipeline.measure.cube_pairs`) and names levels by the release's breakdowns.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from cubeguard.config.load import Release
from cubeguard.methods.cell_key import method as cell_key
from cubeguard.methods.cell_key.model import CellKeyStep
from cubeguard.pipeline.attack import read_attack
from cubeguard.pipeline.measure import cube_pairs, measures_file, sum_loss_pairs
from cubeguard.pipeline.steps import resolved_step
from cubeguard.release.results import Gated, Reported
from cubeguard.report import attack_section, ckm_section, safe_section, sums_section, swap_section
from cubeguard.report.build import build_report
from cubeguard.report.ckm_section import cell_key_section
from cubeguard.report.drilldown import drilldown_frame, finest_levels
from cubeguard.report.gate_names import plain_rows

if TYPE_CHECKING:
    from cubeguard.release.steps import Context


def report_step(ctx: Context) -> Reported:
    """The report step: the internal HTML report of the gated release, named by its release id."""
    gated: Gated = ctx.result("gate")
    release = ctx.release
    measures = pd.read_parquet(measures_file(release))
    rid = ctx.spec.release_id or release.config.name
    facts = {
        "release id": rid,
        "config": f"{release.config.name} (hash {release.config_hash[:16]})",
        "report written": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "run": f"{ctx.spec.run_id}, attempt {ctx.spec.attempt}",
    }
    folder = release.config.output.folder
    pairs = cube_pairs(release)  # for a release with pre-tabular steps: the cubes as delivered
    delivered = pairs if release.config.pre_tabular else None  # else the stores, read without Dask (less memory)
    page = build_report(
        folder,
        gates=plain_rows(gated.rows),
        measures=measures,
        title=f"Release {rid}",
        facts=facts,
        methods=[*_method_sections(ctx), *_sums_section(release, measures), *_attack_section(release)],
        levels=drilldown_frame(
            pairs, finest_levels(release.breakdowns), workers=1
        ),  # 2 threads: no faster, more memory
        pairs=delivered,
    )
    return Reported(str(page))


def _method_sections(ctx: Context) -> list[tuple[str, str, str]]:
    """The report's sections on the release's methods: the cell key method's p-tables and risk, swaps, SAFE."""
    tables = [
        (f"steps[{k}]" + (f" on {', '.join(s.cubes)}" if s.cubes else ""),
         cell_key.ptable(resolved_step(s, f"steps[{k}]", ctx.services.resolver)))
        for k, s in enumerate(ctx.release.config.steps)
        if isinstance(s, CellKeyStep)
    ]  # fmt: skip
    sections = [(ckm_section.ANCHOR, "Cell key method", cell_key_section(tables))]
    sections.append((swap_section.ANCHOR, "Record swapping", swap_section.swap_section(swap_reports(ctx.release))))
    sections.append((safe_section.ANCHOR, "SAFE", safe_section.safe_section(step_reports(ctx.release, "safe"))))
    return [s for s in sections if s[2]]


def _sums_section(release: Release, measures: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The section on published sums and means, for a release whose cubes publish sums (else none)."""
    html = sums_section.sums_section(measures, sum_loss_pairs(release))
    return [(sums_section.ANCHOR, "Sums and means", html)] if html else []


def _attack_section(release: Release) -> list[tuple[str, str, str]]:
    """The section on the attacks, for a release that ran them (else none)."""
    html = (
        attack_section.attack_section(read_attack(release))
        if release.config.gates.max_recovered_by_attack is not None
        else ""
    )
    return [(attack_section.ANCHOR, "Attacks", html)] if html else []


def step_reports(release: Release, method: str) -> list[dict[str, Any]]:
    """The internal reports of the release's pre-tabular steps of one method, in step order."""
    reports = []
    for step in release.config.pre_tabular:
        path = release.config.output.internal / f"{step.name}_report.json"
        if step.method == method and path.is_file():
            reports.append(json.loads(path.read_text()))
    return reports


def swap_reports(release: Release) -> list[dict[str, Any]]:
    """The internal reports of the release's swap steps (those that moved units), in step order."""
    reports = []
    for step in release.config.pre_tabular:
        path = release.config.output.internal / f"{step.name}_report.json"
        report = json.loads(path.read_text()) if path.is_file() else {}
        if "persons_swapped" in report:
            reports.append(report)
    return reports
