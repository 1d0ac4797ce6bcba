"""Household consistency: every member of a household shares its geography and household variables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from schemas.validate import ValidationReport


class HouseholdChecker:
    """Collects one value per (household, column) across batches and flags households that disagree."""

    def __init__(self, hid: str, columns: list[str]) -> None:
        self.hid = hid
        self.columns = columns
        self.parts: list[pd.DataFrame] = []

    def add(self, frame: pd.DataFrame) -> None:
        """Reduce a batch to per-household min/max value codes (a household may span batches)."""
        if not self.columns:
            return
        codes = {c: _codes(frame[c]) for c in self.columns}
        df = pd.DataFrame({self.hid: frame[self.hid].to_numpy(), **codes})
        agg = df.groupby(self.hid, sort=False).agg(["min", "max"])
        agg.columns = [f"{c}|{s}" for c, s in agg.columns]
        self.parts.append(agg)

    def finish(self, report: ValidationReport) -> None:
        """Add one failure per column whose value differs within some household."""
        if not self.parts:
            return
        allp = pd.concat(self.parts)
        for c in self.columns:
            lo = allp[f"{c}|min"].groupby(level=0).min()
            hi = allp[f"{c}|max"].groupby(level=0).max()
            bad = lo.index[(lo != hi).to_numpy()]
            if len(bad):
                samples: list[dict[str, Any]] = [{self.hid: h} for h in bad[:10].tolist()]
                report.add(c, f"same value for every member of a household ({self.hid})", len(bad), samples)


def _codes(s: pd.Series) -> np.ndarray:
    if isinstance(s.dtype, pd.CategoricalDtype):
        # Hash the (few) categories once, then index: a code stable across batches.
        hashed = pd.util.hash_array(s.cat.categories.astype(str).to_numpy())
        return np.asarray(hashed[s.cat.codes.to_numpy()], dtype=np.uint64)
    return np.asarray(pd.util.hash_array(s.to_numpy()), dtype=np.uint64)
