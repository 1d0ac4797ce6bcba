"""The release's report step: the internal HTML report, its facts, its sections per method and drill-down.

The report is written after the gates and before publishing, under the release id the run was
prepared with (:func:`cubeguard.release.run.prepare`), so the archived page names its release.
The drill-down by breakdown and level reads the pairs the measure step measures
(:func:`~cubeguard.pipeline.measure.cube_pairs`) and names levels by the release's breakdowns.
A method's section is the method's own (its ``section`` hook, :mod:`cubeguard.methods.base`);
this module only gathers each hook's steps and renders what it returns.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from cubeguard.config.load import Release
from cubeguard.methods.registry import METHODS, method_of
from cubeguard.methods.section import Section
from cubeguard.pipeline.attack import read_attack
from cubeguard.pipeline.measure import cube_pairs, measures_file, sum_loss_pairs
from cubeguard.pipeline.resolved_steps import resolved_step
from cubeguard.release.results import Gated, Reported
from cubeguard.report import attack_section, sums_section
from cubeguard.report.build import build_report
from cubeguard.report.drilldown import drilldown_frame, finest_levels
from cubeguard.report.gate_names import plain_rows
from cubeguard.report.section import render

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


#: A method's ``section`` hook (:attr:`cubeguard.methods.base.CubeMethod.section`,
#: :attr:`cubeguard.methods.base.MicrodataMethod.section`).
SectionHook = Callable[[Any], Section | None]


def _method_sections(ctx: Context) -> list[tuple[str, str, str]]:
    """The report's sections on the release's methods, ``(anchor, title, HTML)``: each hook's, in registry order.

    A hook is called once, with the steps of every method that names it (in step order), and only
    when the release has such steps; a hook that returns None adds no section.
    """
    found = []
    for hook, steps in section_steps(ctx).items():
        section = hook(steps)
        if section is not None:
            found.append((section.anchor, section.title, render(section)))
    return found


def section_steps(ctx: Context) -> dict[SectionHook, list[Any]]:
    """Per section hook of the release's methods, in registry order: what it is given, in step order.

    A post-tabular step is given as ``(label, step)`` with its secrets resolved (the label
    ``steps[k]``, and ``on`` its cubes when it lists them); a pre-tabular step as its internal report
    (a step whose report was not written is left out). Hooks with nothing to give are left out.
    """
    given: dict[SectionHook, list[Any]] = {m.section: [] for m in METHODS if m.section is not None}
    for k, step in enumerate(ctx.release.config.steps):
        hook = method_of(step).section
        if hook is not None:
            label = f"steps[{k}]" + (f" on {', '.join(step.cubes)}" if step.cubes else "")
            given[hook].append((label, resolved_step(step, f"steps[{k}]", ctx.services.resolver)))
    for hook, report in _reports(ctx.release):
        given[hook].append(report)
    return {hook: steps for hook, steps in given.items() if steps}


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


def _reports(release: Release) -> list[tuple[SectionHook, dict[str, Any]]]:
    """The internal reports of the release's pre-tabular steps whose method has a section hook, in step order."""
    reports = []
    for step in release.config.pre_tabular:
        hook = method_of(step).section
        path = release.config.output.internal / f"{step.name}_report.json"
        if hook is not None and path.is_file():
            reports.append((hook, json.loads(path.read_text())))
    return reports


def step_reports(release: Release, hook: SectionHook) -> list[dict[str, Any]]:
    """The internal reports that ``hook`` is given: of the pre-tabular steps whose method names it, in step order."""
    return [report for h, report in _reports(release) if h is hook]
