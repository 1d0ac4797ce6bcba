"""The report's SAFE section: the stop rule in words, the facts, the schedule and Table 3."""

from __future__ import annotations

from typing import Any

from cubeguard.methods.safe.section import ANCHOR, section
from cubeguard.report.section import render


def safe_section(reports: list[dict[str, Any]]) -> str:
    return render(section(reports))


def _report(stopped_by: str) -> dict[str, Any]:
    return {
        "name": "safe", "method": "safe", "records": 30578, "records_moved": 2805, "stopped_by": stopped_by,
        "elementary_cells": 5784, "unsafe_cells_before": 3565, "cells_emptied": 2208, "controlled_tables": 2,
        "controlled_cells": 14688, "final_bounds": {"one": 2, "other": 6, "correction_step": 8},
        "schedule": [{"model": 2, "correction_step": 0, "bound_one": 4, "bound_other": 6, "moves": 2395,
                      "violations": 0, "accepted": True, "seconds": 8.6}],
        "deviations": {"by_dimension": {"1": [23, 29, 39], "2": [175, 369, 281]}},
        "seconds": 13.9,
    }  # fmt: skip


def test_no_safe_step_no_section() -> None:
    assert safe_section([]) == ""


def test_a_run_stopped_by_the_time_limit_says_it_may_not_reproduce() -> None:
    html = safe_section([_report("time_limit")])
    assert f'id="{ANCHOR}"' in html and "depends on the machine&#x27;s speed" in html
    assert "audit reproduce" in html and "max_tightenings" in html


def test_the_facts_schedule_and_deviations_are_tables() -> None:
    html = safe_section([_report("target")])
    assert "reached the target bounds" in html
    assert ">2,805</td>" in html and "2 / 14688" in html  # records moved; controlled tables / cells
    assert "the bound schedule, stage by stage" in html and ">2,395</td>" in html
    assert "|d| = 2" in html and ">369</td>" in html  # Table 3: dimension 2, deviation 1


def test_a_report_without_a_stop_rule_says_so() -> None:
    report = _report("target")
    del report["stopped_by"]
    assert "not recorded" in safe_section([report])
