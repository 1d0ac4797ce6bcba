"""A cube's SDMX layout: its dataflow, its dimension ids and the SDMX code of each of its codes.

The layout is a pure function of the ``sdmx`` config section (:class:`SdmxSpec`) and what the cube
itself holds (its breakdowns, their variables, codes, labels and depths), so a published store
exports to SDMX without its release config, and the config check sees the same names as the export.

Examples:
    >>> spec = SdmxSpec(codes={"SEX": {"1": "M", "2": "F"}})
    >>> dim = dimension_layout(spec, BreakdownCodes("SEX", "SEX", ("0", "1", "2"), ("Total", "Males", "Females"), (0, 1, 1)))
    >>> dim.sdmx_codes
    ('_T', 'M', 'F')
    >>> dataflow_id(spec, "2.1")
    'CENSUS_2_1'
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import xarray as xr

from cubeguard.sdmx.spec import SdmxSpec

_NOT_ID = re.compile(r"[^A-Za-z0-9_@$\-]")


def as_id(text: str) -> str:
    """``text`` as an SDMX id: every character an id may not hold becomes ``_`` (``2.1.AT`` -> ``2_1_AT``)."""
    return _NOT_ID.sub("_", text.strip()) or "_"


@dataclass(frozen=True)
class BreakdownCodes:
    """What a cube holds about one of its dimensions (codes in the cube's order)."""

    breakdown: str
    variable: str
    codes: tuple[str, ...]
    labels: tuple[str, ...]
    depths: tuple[int, ...]


@dataclass(frozen=True)
class DimensionLayout:
    """One cube dimension in SDMX: its id and the SDMX code of each code, in the cube's order."""

    breakdown: str
    id: str
    codes: tuple[str, ...]
    sdmx_codes: tuple[str, ...]
    labels: tuple[str, ...]


@dataclass(frozen=True)
class CubeLayout:
    """A cube in SDMX: the dataflow its rows name, its dimensions, and the values every row carries."""

    cube_id: str
    label: str
    agency: str
    dataflow: str
    version: str
    time_period: str
    obs_status: str
    conf_status: str
    dimensions: tuple[DimensionLayout, ...]

    @property
    def dataflow_ref(self) -> str:
        """``AGENCY:ID(VERSION)``, as SDMX-CSV writes the structure a row belongs to."""
        return f"{self.agency}:{self.dataflow}({self.version})"

    @property
    def dsd(self) -> str:
        """Id of the cube's data structure definition."""
        return f"DSD_{self.dataflow}"


def dataflow_id(spec: SdmxSpec, cube_id: str) -> str:
    """The dataflow id of cube ``cube_id``: configured, else ``CENSUS_<cube id>``."""
    return spec.dataflows.get(cube_id) or f"CENSUS_{as_id(cube_id)}"


def dimension_id(spec: SdmxSpec, breakdown: str, variable: str) -> str:
    """The dimension id of a breakdown: configured, else its variable in upper case (``AGE.M`` -> ``AGE``)."""
    configured = spec.dimensions.get(breakdown)
    if configured:
        return configured
    name = as_id(variable).upper().replace("@", "_").replace("$", "_")
    return name if name[0].isalpha() else f"D_{name}"


def dimension_layout(spec: SdmxSpec, codes: BreakdownCodes) -> DimensionLayout:
    """SDMX codes of one dimension: configured, else the code as an id; the total becomes ``total_code``."""
    dim = dimension_id(spec, codes.breakdown, codes.variable)
    mapped = spec.codes.get(dim, {})
    sdmx = tuple(
        mapped.get(code) or (spec.total_code if depth == 0 else as_id(code))
        for code, depth in zip(codes.codes, codes.depths, strict=True)
    )
    return DimensionLayout(codes.breakdown, dim, codes.codes, sdmx, codes.labels)


def cube_layout(spec: SdmxSpec, cube_id: str, label: str, dims: Sequence[BreakdownCodes]) -> CubeLayout:
    """The SDMX layout of a cube from its dimensions' codes."""
    return CubeLayout(
        cube_id=cube_id,
        label=label or f"Hypercube {cube_id}",
        agency=spec.agency,
        dataflow=dataflow_id(spec, cube_id),
        version=spec.version,
        time_period=spec.time_period,
        obs_status=spec.obs_status,
        conf_status="F",
        dimensions=tuple(dimension_layout(spec, d) for d in dims),
    )


def breakdown_codes(cube: xr.Dataset) -> list[BreakdownCodes]:
    """What ``cube`` holds about each dimension of its ``count`` (as the store writes it)."""
    variables = cube.attrs.get("variables") or {}
    out = []
    for d in (str(x) for x in cube["count"].dims):
        codes = tuple(str(c) for c in cube[d].values.tolist())
        labels = tuple(str(x) for x in cube[f"{d}.label"].values.tolist()) if f"{d}.label" in cube.coords else codes
        if f"{d}.depth" in cube.coords:
            depths = tuple(int(x) for x in cube[f"{d}.depth"].values.tolist())
        elif f"{d}.parent" in cube.coords:  # a table of the table service: the total has no parent
            depths = tuple(0 if not str(p) else 1 for p in cube[f"{d}.parent"].values.tolist())
        else:
            depths = (1,) * len(codes)
        out.append(BreakdownCodes(d, str(variables.get(d, d.split(".")[0])), codes, labels, depths))
    return out


def layout_of_cube(spec: SdmxSpec, cube: xr.Dataset) -> CubeLayout:
    """The SDMX layout of a cube read from a store."""
    return cube_layout(
        spec, str(cube.attrs.get("cube_id", "")), str(cube.attrs.get("label", "")), breakdown_codes(cube)
    )


def layout_problems(spec: SdmxSpec, layouts: Sequence[CubeLayout]) -> list[tuple[tuple[str, ...], str]]:
    """What makes these layouts unusable, each with the config key to change (empty: none).

    Two dimensions of a cube with one id, two codes of a dimension with one SDMX code, a mapped
    code no cube has, and a configured dataflow or dimension that names no cube or breakdown.
    """
    problems: list[tuple[tuple[str, ...], str]] = []
    seen_codes: dict[str, set[str]] = {}
    for lay in layouts:
        ids = [d.id for d in lay.dimensions]
        for dim in lay.dimensions:
            seen_codes.setdefault(dim.id, set()).update(dim.codes)
            if ids.count(dim.id) > 1:
                problems.append(
                    (
                        ("sdmx", "dimensions", dim.breakdown),
                        f"cube {lay.cube_id} has two dimensions with id {dim.id!r}; "
                        "give one of its breakdowns another dimension id",
                    )
                )
            clash = _first_clash(dim)
            if clash:
                problems.append(
                    (("sdmx", "codes", dim.id), f"{clash} in cube {lay.cube_id}; map one of them to another code")
                )
    problems += _unknown_keys(spec, layouts, seen_codes)
    return list(dict.fromkeys(problems))


def _first_clash(dim: DimensionLayout) -> str | None:
    first: dict[str, str] = {}
    for code, sdmx in zip(dim.codes, dim.sdmx_codes, strict=True):
        if sdmx in first and first[sdmx] != code:
            return f"codes {first[sdmx]!r} and {code!r} of {dim.breakdown} both become SDMX code {sdmx!r}"
        first.setdefault(sdmx, code)
    return None


def _unknown_keys(
    spec: SdmxSpec, layouts: Sequence[CubeLayout], seen_codes: dict[str, set[str]]
) -> list[tuple[tuple[str, ...], str]]:
    cubes = {lay.cube_id for lay in layouts}
    breakdowns = {d.breakdown for lay in layouts for d in lay.dimensions}
    out: list[tuple[tuple[str, ...], str]] = [
        (("sdmx", "dataflows", c), f"no hypercube has id {c!r}; known: {', '.join(sorted(cubes)[:8])}")
        for c in spec.dataflows
        if c not in cubes
    ]
    out += [
        (("sdmx", "dimensions", b), f"no hypercube uses breakdown {b!r}")
        for b in spec.dimensions
        if b not in breakdowns
    ]
    for dim, mapping in spec.codes.items():
        if dim not in seen_codes:
            out.append((("sdmx", "codes", dim), f"no dimension has id {dim!r}; known: {', '.join(sorted(seen_codes))}"))
            continue
        out += [
            (("sdmx", "codes", dim, code), f"{code!r} is not a code of dimension {dim}")
            for code in mapping
            if code not in seen_codes[dim]
        ]
    return out
