"""The frozen outcome of a gate run, and how Great Expectations results are read into it.

A gate passes when every *blocking* expectation (severity ``critical``) succeeded and no
expectation *errored*. GX reports an expectation whose metric raised as ``success: false`` with the
error buried in ``exception_info`` (keyed by metric id rather than at the top level; STACK.md), so
:func:`errored` looks in both places: an error can never pass as a plain failure or, worse, as a
success. Non-blocking expectations (severity ``warning``, e.g. additivity when the release does
not promise it) are reported but do not fail the gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_LINES = 20


def errored(exception_info: Any) -> str | None:
    """The error message of an expectation result's ``exception_info``, or None if nothing raised."""
    if not isinstance(exception_info, dict):
        return None
    if exception_info.get("raised_exception"):
        return str(exception_info.get("exception_message") or "an exception was raised")
    for value in exception_info.values():
        if isinstance(value, dict) and value.get("raised_exception"):
            return str(value.get("exception_message") or "an exception was raised")
    return None


@dataclass(frozen=True)
class GateOutcome:
    """One expectation on one cube.

    Attributes:
        cube: cube id (for the measures suite: the cube whose row was checked).
        expectation: the expectation's class name (its business name).
        success: GX's verdict (False when errored).
        blocking: whether a failure fails the gate (severity ``critical``).
        error: the error message when the expectation errored, else None.
        observed: the observed value (count, share or measure), None when errored.
        threshold: what was required, for people.
    """

    cube: str
    expectation: str
    success: bool
    blocking: bool
    error: str | None
    observed: float | int | str | None
    threshold: str

    @property
    def errored(self) -> bool:
        """Whether the expectation could not be evaluated."""
        return self.error is not None

    @property
    def fails_gate(self) -> bool:
        """Errored, or a blocking expectation that failed."""
        return self.errored or (self.blocking and not self.success)

    def line(self) -> str:
        """One short line: cube, expectation, observed vs threshold."""
        if self.error is not None:
            return f"ERROR {self.cube}: {self.expectation}: {_short(self.error)}"
        tag = "FAIL " if self.blocking else "warn "
        return f"{tag}{self.cube}: {self.expectation}: observed {_fmt(self.observed)}, required {self.threshold}"


def _fmt(value: float | int | str | None) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return "n/a" if value is None else str(value)


def _short(text: str, width: int = 100) -> str:
    first = text.strip().splitlines()[0] if text.strip() else text
    return first if len(first) <= width else first[: width - 3] + "..."


@dataclass(frozen=True)
class GateReport:
    """Outcome of :func:`expectations.gates.run_gates`.

    Attributes:
        outcomes: one per cube per expectation, in cube order then suite order.
        suite_lengths: expectations per suite as built (``cube`` and ``measures``).
        docs_index: the Data Docs ``index.html`` (None when no docs folder was given).
    """

    outcomes: tuple[GateOutcome, ...]
    suite_lengths: tuple[tuple[str, int], ...]
    docs_index: Path | None = None

    @property
    def passed(self) -> bool:
        """True when no blocking expectation failed and none errored."""
        return not any(o.fails_gate for o in self.outcomes)

    @property
    def errored(self) -> bool:
        """True when any expectation errored (which fails the gate)."""
        return any(o.errored for o in self.outcomes)

    def for_cube(self, cube: str) -> dict[str, GateOutcome]:
        """The outcomes of one cube, keyed by expectation name."""
        return {o.expectation: o for o in self.outcomes if o.cube == cube}

    def failures(self, max_lines: int = MAX_LINES) -> list[str]:
        """Failing and errored expectations as short lines (errors, then blocking, then warnings).

        At most ``max_lines`` lines; the last says how many more there are.
        """
        bad = [o for o in self.outcomes if o.errored or not o.success]
        bad.sort(key=lambda o: (not o.errored, not o.blocking))
        lines = [o.line() for o in bad]
        if len(lines) > max_lines:
            more = len(lines) - (max_lines - 1)
            lines = [*lines[: max_lines - 1], f"... and {more} more (see the Data Docs)"]
        return lines
