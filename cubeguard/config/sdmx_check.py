"""Config-time checks of the ``sdmx`` section, before any microdata is read.

The SDMX names of every cube are worked out from the config's breakdowns exactly as the export
works them out from the store (:mod:`cubeguard.sdmx.layout`), so a clash found here is the clash
the export would meet. When the section names a structure file and the release exports SDMX-CSV,
each cube's dataflow must be in it with the same dimensions and codes its code lists allow.
"""

from __future__ import annotations

from collections.abc import Callable

from cubeguard.config.models import ReleaseConfig
from cubeguard.cubes.hierarchy import Breakdown
from cubeguard.errors import CubeguardError
from cubeguard.sdmx.layout import BreakdownCodes, CubeLayout, cube_layout, layout_problems

Add = Callable[[tuple[str | int, ...], str], None]


def release_layouts(cfg: ReleaseConfig, breakdowns: dict[str, Breakdown]) -> list[CubeLayout]:
    """The SDMX layout of every hypercube of the config (those whose breakdowns resolved)."""
    out = []
    for cube in cfg.hypercubes:
        if all(b in breakdowns for b in cube.breakdowns):
            dims = [_codes(breakdowns[b]) for b in cube.breakdowns]
            out.append(cube_layout(cfg.sdmx, cube.id, cube.label, dims))
    return out


def _codes(b: Breakdown) -> BreakdownCodes:
    cls = b.classification
    return BreakdownCodes(b.id, cls.variable, tuple(b.codes), tuple(b.labels), tuple(cls.depth[i] for i in b.selected))


def check_sdmx(cfg: ReleaseConfig, breakdowns: dict[str, Breakdown], add: Add) -> None:
    """Add a problem for every SDMX name that clashes, and every cube the structure file cannot hold."""
    layouts = release_layouts(cfg, breakdowns)
    for where, message in layout_problems(cfg.sdmx, layouts):
        add(where, message)
    if cfg.sdmx.structure is not None and "sdmx-csv" in cfg.output.exports:
        for message in structure_problems(cfg, layouts):
            add(("sdmx", "structure"), message)


def structure_problems(cfg: ReleaseConfig, layouts: list[CubeLayout]) -> list[str]:
    """Why the structure file cannot take the release's SDMX-CSV exports (empty: it can)."""
    from cubeguard.sdmx.validate import read_structures  # reads SDMX-ML: only when a structure is named

    assert cfg.sdmx.structure is not None
    try:
        dsds = read_structures(cfg.sdmx.structure)
    except CubeguardError as exc:
        return [str(exc)]
    problems = []
    for lay in layouts:
        dsd = dsds.get(lay.dataflow_ref)
        if dsd is None:
            problems.append(f"{cfg.sdmx.structure.name} has no dataflow {lay.dataflow_ref} for cube {lay.cube_id}")
            continue
        wanted = {c.id: c for c in dsd.components.dimensions if c.id != "TIME_PERIOD"}
        have = [d.id for d in lay.dimensions]
        if sorted(have) != sorted(wanted):
            problems.append(f"cube {lay.cube_id} has dimensions {have}; {dsd.id} has {sorted(wanted)}")
            continue
        for dim in lay.dimensions:
            listed = wanted[dim.id].enumeration
            allowed = {c.id for c in listed} if listed is not None else set(dim.sdmx_codes)
            missing = [c for c in dim.sdmx_codes if c not in allowed]
            if missing:
                problems.append(
                    f"codes {missing[:5]} of {dim.breakdown} (cube {lay.cube_id}) are not in {dsd.id}'s code list"
                )
    return problems
