"""Parameter sweep (issue 6): one protection step over a grid of parameter sets, measured and gated.

* :mod:`~cubeguard.sweep.grid` reads and validates the grid file (``load_grid``);
* :mod:`~cubeguard.sweep.run` applies each set to the release's tabulated cubes in parallel with
  Dask and aggregates the measures per set (``run_sweep``, ``sweep_folder``);
* :mod:`~cubeguard.sweep.gates` applies the release's gate thresholds through :mod:`cubeguard.gates`;
* :mod:`~cubeguard.sweep.output` writes the Parquet tables, the R-U map and ``sweep.html``.

Every output names the secret parameters, so it goes under the release's ``internal/`` folder.
"""

from cubeguard.sweep.grid import Grid, SweepGridError, grid_from_mapping, load_grid
from cubeguard.sweep.run import SweepResult, build_steps, run_sweep, sweep_folder

__all__ = [
    "Grid",
    "SweepGridError",
    "SweepResult",
    "build_steps",
    "grid_from_mapping",
    "load_grid",
    "run_sweep",
    "sweep_folder",
]
