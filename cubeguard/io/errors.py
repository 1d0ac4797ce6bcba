"""One error for a foreign file with one or more problems (each named with its line)."""

from __future__ import annotations

from collections.abc import Sequence

from cubeguard.errors import CubeguardError

MAX_SHOWN = 5


class FileProblemsError(CubeguardError):
    """A file cubeguard cannot use; ``problems`` lists every problem, the message the first few.

    Attributes:
        source: the file (or description) the problems were found in.
        problems: every problem found, each prefixed with its line where there is one.
    """

    def __init__(self, source: str, problems: Sequence[str], hint: str = "") -> None:
        """Collect the problems of ``source``; the message shows the first few."""
        self.source = source
        self.problems = tuple(problems)
        super().__init__(summary(source, self.problems) + (f" ({hint})" if hint else ""))


def summary(source: str, problems: tuple[str, ...]) -> str:
    """``source, problem`` for one problem, else a count and the first few."""
    if len(problems) == 1:
        return f"{source}, {problems[0]}"
    shown = "; ".join(problems[:MAX_SHOWN])
    more = f"; and {len(problems) - MAX_SHOWN} more" if len(problems) > MAX_SHOWN else ""
    return f"{source} has {len(problems)} problems: {shown}{more}"
