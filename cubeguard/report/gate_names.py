"""The release gates' checks in plain words, with their observed values at a readable precision.

The gate step names each check by its Great Expectations class (``ExpectSmallCellsUnchangedShareToBeAtMost``);
the report shows a methodologist what is measured instead, in the terms of the config's ``gates``
keys. A name not listed here is shown as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_PLAIN = {
    "ExpectPublishedCountsOutsideForbiddenSet": "published counts in gates.forbidden_values (cells)",
    "ExpectSmallCellsUnchangedShareToBeAtMost": "share of original 1s and 2s published unchanged (gates.max_small_cells_unchanged)",
    "ExpectTotalsEqualSumOfChildren": "totals that differ from the sum of their parts (cells; additivity)",
}
_MEASURES = {
    "hellinger": "Hellinger distance (gates.max_hellinger)",
    "average_absolute_distance": "mean absolute deviation (gates.max_mean_absolute_deviation)",
}
NOTHING = "nothing to measure"  # an observed value of None, e.g. the small-cell share of a cube without small cells
_SCOPED = re.compile(r"^(?P<check>\w+)\[(?P<measure>[\w.]+)@(?P<scope>[\w.:-]+)\]$")


def plain_check(expectation: str) -> str:
    """What an expectation checks, in words (``ExpectDistanceWithinBound[hellinger@interior]`` included)."""
    if expectation in _PLAIN:
        return _PLAIN[expectation]
    scoped = _SCOPED.match(expectation)
    if scoped:
        measure = _MEASURES.get(scoped["measure"], scoped["measure"].replace("_", " "))
        scope = "interior cells" if scoped["scope"] == "interior" else f"scope {scoped['scope']}"
        return f"{measure}, {scope}"
    return expectation


def readable(value: object) -> object:
    """A number (or numeric text) to four significant digits; anything else as it is."""
    if isinstance(value, bool) or value is None:
        return value
    try:
        number = float(str(value))
    except ValueError:
        return value
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else f"{number:.4g}"


def plain_rows(rows: Iterable[dict[str, object]]) -> list[dict[str, object]]:
    """Gate rows for people: the check in words, the observed value rounded (or :data:`NOTHING`); the rest kept."""
    out = []
    for row in rows:
        shown = dict(row)
        if "expectation" in shown:
            shown["expectation"] = plain_check(str(shown["expectation"]))
            shown = {("check" if k == "expectation" else k): v for k, v in shown.items()}
        if "observed" in shown:  # None: the check had no cells to measure (a cube without small cells)
            shown["observed"] = NOTHING if shown["observed"] is None else readable(shown["observed"])
        out.append(shown)
    return out
