"""Gate report logic: errors fail the gate, warnings do not, failures fit one screen."""

from __future__ import annotations

from expectations.report import GateOutcome, GateReport, errored


def _o(cube: str = "c1", success: bool = True, blocking: bool = True, error: str | None = None) -> GateOutcome:
    return GateOutcome(cube, "ExpectX", success, blocking, error, None if error else 3, "<= 2")


def test_errors_are_found_at_the_top_level_and_under_metric_ids() -> None:
    assert errored({"raised_exception": False, "exception_message": None}) is None
    assert errored({"raised_exception": True, "exception_message": "boom"}) == "boom"
    nested = {
        "MetricConfigurationID(...)": {"raised_exception": True, "exception_message": 'column "x" does not exist'}
    }
    assert errored(nested) == 'column "x" does not exist'
    assert errored(None) is None


def test_a_failed_warning_is_reported_but_does_not_fail_the_gate() -> None:
    report = GateReport((_o(), _o(success=False, blocking=False)), ())
    assert report.passed and not report.errored
    assert report.failures() == ["warn c1: ExpectX: observed 3, required <= 2"]


def test_an_errored_expectation_fails_the_gate_even_when_not_blocking() -> None:
    report = GateReport((_o(), _o(success=False, blocking=False, error="metric failed\ntraceback")), ())
    assert not report.passed and report.errored
    assert report.failures() == ["ERROR c1: ExpectX: metric failed"]


def test_a_failed_blocking_expectation_fails_the_gate() -> None:
    report = GateReport((_o("a"), _o("b", success=False)), ())
    assert not report.passed
    assert report.failures() == ["FAIL b: ExpectX: observed 3, required <= 2"]
    assert report.for_cube("b")["ExpectX"].fails_gate


def test_failures_put_errors_first_and_fit_one_screen() -> None:
    outcomes = [_o(f"w{i}", success=False, blocking=False) for i in range(30)]
    outcomes += [_o("f", success=False), _o("e", success=False, error="x")]
    lines = GateReport(tuple(outcomes), ()).failures(max_lines=10)
    assert len(lines) == 10
    assert lines[0].startswith("ERROR e") and lines[1].startswith("FAIL f")
    assert lines[-1] == "... and 23 more (see the Data Docs)"
