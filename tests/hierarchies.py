"""Hypothesis strategies for random classifications and the microdata that uses them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import strategies as st

from cubeguard.ckm.keys import KeyScale
from cubeguard.cubes.hierarchy import Breakdown, build_classification, select_breakdown
from cubeguard.cubes.spec import CodeSpec, PopulationSpec, VariableSpec
from cubeguard.cubes.tabulate import CubePlan, Tabulator


@st.composite
def classifications(draw: st.DrawFn, name: str = "V") -> VariableSpec:
    """A random code tree (depth 1-3, 1-4 children per node) as a VariableSpec of dtype code."""
    codes = [CodeSpec(code=f"{name}", label="Total")]
    frontier = [(name, 0)]
    max_depth = draw(st.integers(1, 3))
    while frontier:
        parent, depth = frontier.pop(0)
        if depth == max_depth or (depth > 0 and draw(st.booleans())):
            continue
        for k in range(draw(st.integers(1, 4))):
            code = f"{parent}.{k}"
            codes.append(CodeSpec(code=code, parent=parent))
            frontier.append((code, depth + 1))
    if len(codes) == 1:
        codes.append(CodeSpec(code=f"{name}.0", parent=name))
    return VariableSpec(column=name.lower(), codes=codes, breakdowns={f"{name}.ALL": {}})  # type: ignore[arg-type]


def breakdown_of(spec: VariableSpec, name: str, depth: int | None = None) -> Breakdown:
    cls, problems = build_classification(name, spec)
    assert not problems
    return select_breakdown(f"{name}.{depth}", cls, depth, None)


def leaf_codes(bd: Breakdown) -> list[str]:
    c = bd.classification
    return [code for code, kids in zip(c.codes, c.children, strict=True) if not kids]


def random_microdata(bds: list[Breakdown], n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    data = {b.column: rng.choice(leaf_codes(b), n) for b in bds}
    data["rkey"] = rng.random(n)
    return pd.DataFrame(data)


def tabulate_frame(bds: list[Breakdown], frame: pd.DataFrame, batch: int, scale: KeyScale | None = None) -> Tabulator:
    tab = Tabulator(
        [CubePlan("x", tuple(bds), "total")], {"total": PopulationSpec()}, scale or KeyScale(), "rkey", None
    )
    for start in range(0, max(len(frame), 1), batch):
        tab.add_batch(pa.RecordBatch.from_pandas(frame.iloc[start : start + batch], preserve_index=False))
    return tab
