"""Tests that read ``../shared`` (course data, goldens) skip on a machine without it, and fail in CI.

CI runs beside ``../shared`` (the project's sibling folder); a skip there would hide that a golden
comparison or a course-data test never ran. A test skipped with a reason naming shared data that
is "not present" is reported failed when the environment says CI (``CI`` set to a true value,
as ``.ci/run`` does).
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest


def in_ci() -> bool:
    """True when the environment says this is a CI run (``CI`` set, and not to a false value)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    return str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    """In CI, a skip for missing shared data is a failure saying where the data belongs."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    reason = _reason(report) if report.skipped else ""
    if report.skipped and in_ci() and "shared" in reason and "not present" in reason:
        report.outcome = "failed"
        report.longrepr = f"{reason}: CI runs beside ../shared (the project's sibling folder); check it out there"
