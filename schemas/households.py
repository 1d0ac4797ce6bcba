"""Household consistency: members share their household columns; no household has two reference persons.

The reference persons are checked only where a population counts households. A household id with
none is a unit outside private households (persons in an institution), which household counts leave
out; two would count one household twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from schemas.validate import ValidationReport


class HouseholdChecker:
    """Collects one value per (household, column) across batches and flags households that disagree."""

    def __init__(self, hid: str, columns: list[str], ref: str | None = None) -> None:
        self.hid = hid
        self.columns = columns
        self.ref = ref
        self.parts: list[pd.DataFrame] = []
        self.refs: list[pd.Series] = []

    def add(self, frame: pd.DataFrame) -> None:
        """Reduce a batch to per-household min/max value codes and reference persons (a household may span batches)."""
        if self.ref is not None:
            flags = pd.Series(frame[self.ref].fillna(False).to_numpy(dtype=bool).astype(np.int64))
            self.refs.append(flags.groupby(frame[self.hid].to_numpy(), sort=False).sum())
        if not self.columns:
            return
        codes = {c: _codes(frame[c]) for c in self.columns}
        df = pd.DataFrame({self.hid: frame[self.hid].to_numpy(), **codes})
        agg = df.groupby(self.hid, sort=False).agg(["min", "max"])
        agg.columns = [f"{c}|{s}" for c, s in agg.columns]
        self.parts.append(agg)

    def finish(self, report: ValidationReport) -> None:
        """Add one failure per column whose value differs within some household, and one for doubled reference persons."""
        if self.ref is not None and self.refs:
            per_household = pd.concat(self.refs).groupby(level=0).sum()
            bad = per_household.index[(per_household > 1).to_numpy()]
            if len(bad):
                samples: list[dict[str, Any]] = [{self.hid: h} for h in bad[:10].tolist()]
                report.add(self.ref, f"at most one reference person in each household ({self.hid})", len(bad), samples)
        if not self.parts:
            return
        allp = pd.concat(self.parts)
        for c in self.columns:
            lo = allp[f"{c}|min"].groupby(level=0).min()
            hi = allp[f"{c}|max"].groupby(level=0).max()
            bad = lo.index[(lo != hi).to_numpy()]
            if len(bad):
                samples = [{self.hid: h} for h in bad[:10].tolist()]
                report.add(c, f"same value for every member of a household ({self.hid})", len(bad), samples)


def _codes(s: pd.Series) -> np.ndarray:
    if isinstance(s.dtype, pd.CategoricalDtype):
        # Hash the (few) categories once, then index: a code stable across batches.
        hashed = pd.util.hash_array(s.cat.categories.astype(str).to_numpy())
        return np.asarray(hashed[s.cat.codes.to_numpy()], dtype=np.uint64)
    return np.asarray(pd.util.hash_array(s.to_numpy()), dtype=np.uint64)
