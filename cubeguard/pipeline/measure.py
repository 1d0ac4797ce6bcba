"""The release's measure step: information loss and disclosure risk of every cube, to Parquet."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from cubeguard.config.load import Release
from cubeguard.cubes.store import list_cubes, open_cube
from cubeguard.measures.table import MeasureSpec, measure_cubes


def cube_pairs(release: Release) -> dict[str, tuple[object, object]]:
    """(original, protected) of every cube, opened lazily from the release's stores."""
    out = release.config.output
    return {
        c: (open_cube(out.original_store, c), open_cube(out.protected_store, c))
        for c in list_cubes(out.protected_store)
    }


def measures_file(release: Release) -> Path:
    """Where the measure step writes its table (internal: measures of protected and original cells)."""
    return release.config.output.internal / "measures.parquet"


def measure_release(release: Release, spec: MeasureSpec | None = None) -> Path:
    """Measure every cube (two at a time in memory, in threads) and write one row per cube to Parquet."""
    table: pd.DataFrame = measure_cubes(cube_pairs(release), spec or MeasureSpec(), workers=2)  # type: ignore[arg-type]
    target = measures_file(release)
    target.parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(target)
    return target
