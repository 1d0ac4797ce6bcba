"""The tiny release of the tests and benchmarks: a config (three regions, sex, age) and its microdata."""

from __future__ import annotations

import numpy as np
import pandas as pd

TINY_GEO_CODES = """\
    codes:
      - {code: "0", label: Country}
      - {code: "A", parent: "0"}
      - {code: "A1", parent: "A"}
      - {code: "A2", parent: "A"}
      - {code: "B", parent: "0"}
      - {code: "B1", parent: "B"}
"""  # the GEO code list of TINY_CONFIG
TINY_CONFIG = (
    """\
schema_version: 1
name: tiny
input:
  microdata: data/persons.parquet
  household_columns: [region]
variables:
  SEX:
    column: sex
    codes:
      - {code: "0", label: Total}
      - {code: "1", label: Males, parent: "0"}
      - {code: "2", label: Females, parent: "0"}
    breakdowns: {SEX: {}}
  AGE:
    column: age
    dtype: integer
    codes:
      - {code: T, label: Total}
      - {code: Y_LT15, parent: T}
      - {code: Y0-4, parent: Y_LT15, range: [0, 4]}
      - {code: Y5-14, parent: Y_LT15, range: [5, 14]}
      - {code: Y15-64, parent: T, range: [15, 64]}
      - {code: Y_GE65, parent: T, range: [65, 120]}
    breakdowns: {AGE.L: {depth: 1}, AGE.M: {}}
  GEO:
    column: region
"""
    + TINY_GEO_CODES
    + """    breakdowns: {GEO.1: {depth: 1}, GEO.2: {}}
populations:
  total: {}
  households: {unit: households}
hypercubes:
  - {id: c1, breakdowns: [GEO.2, SEX, AGE.M]}
  - {id: c2, breakdowns: [GEO.1, AGE.L]}
  - {id: hh, population: households, breakdowns: [GEO.2]}
steps:
  - {method: cell_key, D: 5, V: 3, js: 2}
output: {folder: out}
gates: {forbidden_values: [1, 2]}
"""
)
TINY_GATES = "gates: {forbidden_values: [1, 2]}\n"  # its last line: a release must have a disclosure gate
CELL_KEY_STEP = "  - {method: cell_key, D: 5, V: 3, js: 2}\n"  # TINY_CONFIG's one step


def tiny_microdata(n_households: int = 3000, seed: int = 7) -> pd.DataFrame:
    """Persons in households for TINY_CONFIG: members share the region."""
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 5, n_households)
    hid = np.repeat(np.arange(n_households), size)
    region = np.repeat(rng.choice(["A1", "A2", "B1"], n_households, p=[0.5, 0.3, 0.2]), size)
    n = hid.size
    first = np.r_[True, hid[1:] != hid[:-1]]
    return pd.DataFrame(
        {
            "pid": np.arange(n, dtype=np.int64),
            "hid": hid.astype(np.int64),
            "is_ref": first,
            "region": pd.Categorical(region),
            "sex": pd.Categorical(rng.choice(["1", "2"], n)),
            "age": rng.integers(0, 100, n).astype(np.int16),
            "rkey": rng.random(n),
        }
    )
