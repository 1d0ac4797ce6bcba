"""The two kinds of failure cubeguard distinguishes.

A :class:`CubeguardError` is something the user can fix (bad config, bad input, infeasible
parameters); its message is one sentence that says what to change. An :class:`InternalError` is a
broken invariant inside cubeguard: a bug to report, never the user's fault.
"""

from pathlib import Path


class CubeguardError(Exception):
    """A mistake the user can correct; the message says what to change."""


class ConfigError(CubeguardError):
    """A release config with one or more problems; ``problems`` lists them all."""

    def __init__(self, file: Path, problems: list[str]) -> None:
        self.file = file
        self.problems = problems
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        super().__init__(f"{problems[0]}{more}")


class InternalError(Exception):
    """A broken invariant: this is a bug in cubeguard."""


class ReleaseBlocked(CubeguardError):
    """A gate failed: nothing is published; ``failures`` lists the failing checks (CLI exit 1).

    ``blocking`` counts the checks that block (failed or errored), ``warnings`` the failed checks
    that only warn; ``failures`` lists both, the blocking ones first.
    """

    def __init__(self, failures: list[str], blocking: int | None = None, warnings: int = 0) -> None:
        self.failures = failures
        self.blocking = len(failures) if blocking is None else blocking
        self.warnings = warnings
        also = f" (and {warnings} warning(s))" if warnings else ""
        super().__init__(
            f"the release is blocked: {self.blocking} blocking gate check(s) failed{also}; see the list above"
        )
