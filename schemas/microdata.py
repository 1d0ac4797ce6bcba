"""The Pandera schema of a release's microdata, built from its config.

Every classified column must hold raw values of its classification (no nulls), record keys must be
present and in [0, 1), person ids and household ids present. Checks that span batches (unique person
ids, household members sharing geography and household variables) live in ``schemas.validate``.
"""

from __future__ import annotations

import pandera.pandas as pa

from cubeguard.config.load import Release


def leaf_values(release: Release, variable: str) -> list[str] | list[int]:
    """Every raw value a column may hold: the values of the leaves of its classification."""
    bd = next(b for b in release.breakdowns.values() if b.classification.variable == variable)
    vals = [v for leaf in bd.classification.leaf_values for v in leaf]
    return vals  # type: ignore[return-value]


def microdata_schema(release: Release) -> pa.DataFrameSchema:
    """A lazily-checked schema over one batch of the release's microdata."""
    cfg = release.config
    checks: dict[str, list[pa.Check]] = {}
    for name, var in cfg.variables.items():  # several variables may classify one column
        allowed = leaf_values(release, name)
        check = pa.Check.isin(allowed, name=f"in classification {name}", error=f"value not a leaf code of {name}")
        checks.setdefault(var.column, []).append(check)
    columns = {
        col: pa.Column(None, checks=cs, nullable=False, required=True, coerce=False) for col, cs in checks.items()
    }
    key = cfg.input.record_key
    if key.generate_seed is None:
        columns[key.column] = pa.Column(
            float,
            checks=[pa.Check.ge(0, error="record key >= 0"), pa.Check.lt(1, error="record key < 1")],
            nullable=False,
        )
    for col in (cfg.input.person_id, cfg.input.household_id):
        if col:
            columns[col] = pa.Column(None, nullable=False, required=True)
    return pa.DataFrameSchema(columns, strict=False, name=f"microdata of release {cfg.name}")
