"""SDMX structures of a release: code lists, concepts, one DSD and one dataflow per cube (pysdmx).

Each cube gets its own data structure definition, as the census hypercubes have different
dimensions: its breakdowns (one dimension each, coded by the dimension's code list), then
``TIME_PERIOD``, the measure ``OBS_VALUE`` (an integer count) and two observation attributes coded
by the SDMX cross-domain code lists: ``OBS_STATUS`` (SDMX code list CL_OBS_STATUS) and
``CONF_STATUS`` (CL_CONF_STATUS). A dimension shared by several cubes (``AGE`` of AGE.L, AGE.M and
AGE.H) has one code list holding the codes of every breakdown. The structures are written as an
SDMX-ML 3.0 structure message by pysdmx, which also reads them back with XSD validation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from pysdmx.io import write_sdmx
from pysdmx.io.format import Format
from pysdmx.model import (
    Code,
    Codelist,
    Component,
    Components,
    Concept,
    ConceptScheme,
    Dataflow,
    DataStructureDefinition,
    DataType,
    Organisation,
    Role,
    Schema,
)
from pysdmx.model.message import Header

from cubeguard.sdmx.layout import CubeLayout
from cubeguard.sdmx.spec import CONF_STATUS, OBS_STATUS

#: The components every cube has besides its breakdowns, in DSD order.
TIME, MEASURE, ATTRIBUTES = "TIME_PERIOD", "OBS_VALUE", ("OBS_STATUS", "CONF_STATUS")
CONCEPTS = "CS_CENSUS"


def _urn(kind: str, agency: str, ident: str, version: str, item: str | None = None) -> str:
    package = {"Codelist": "codelist", "Concept": "conceptscheme", "DataStructure": "datastructure"}[kind]
    tail = f".{item}" if item else ""
    return f"urn:sdmx:org.sdmx.infomodel.{package}.{kind}={agency}:{ident}({version}){tail}"


def _codelist(agency: str, version: str, ident: str, name: str, codes: Iterable[tuple[str, str]]) -> Codelist:
    return Codelist(
        id=ident,
        agency=agency,
        version=version,
        name=name,
        urn=_urn("Codelist", agency, ident, version),
        items=[Code(id=c, name=label or c) for c, label in codes],
    )


def dimension_codelists(layouts: Sequence[CubeLayout]) -> dict[str, Codelist]:
    """One code list per dimension id (``CL_<id>``): the codes of every cube, in first-seen order."""
    codes: dict[str, dict[str, str]] = {}
    for lay in layouts:
        for dim in lay.dimensions:
            seen = codes.setdefault(dim.id, {})
            for code, label in zip(dim.sdmx_codes, dim.labels, strict=True):
                seen.setdefault(code, label)
    first = layouts[0]
    return {
        dim: _codelist(first.agency, first.version, f"CL_{dim}", dim, found.items()) for dim, found in codes.items()
    }


def _attribute_codelists(agency: str, version: str) -> dict[str, Codelist]:
    return {
        "OBS_STATUS": _codelist(agency, version, "CL_OBS_STATUS", "Observation status", OBS_STATUS.items()),
        "CONF_STATUS": _codelist(agency, version, "CL_CONF_STATUS", "Confidentiality status", CONF_STATUS.items()),
    }


def _concepts(agency: str, version: str, lists: dict[str, Codelist]) -> ConceptScheme:
    def concept(ident: str, name: str, dtype: DataType) -> Concept:
        return Concept(
            id=ident,
            name=name,
            dtype=dtype,
            codes=lists.get(ident),
            urn=_urn("Concept", agency, CONCEPTS, version, ident),
        )

    items = [concept(d, d, DataType.STRING) for d in lists if d not in ATTRIBUTES]
    items += [
        concept(TIME, "Time period", DataType.PERIOD),
        concept(MEASURE, "Observation value", DataType.INTEGER),
        concept("OBS_STATUS", "Observation status", DataType.STRING),
        concept("CONF_STATUS", "Confidentiality status", DataType.STRING),
    ]
    return ConceptScheme(id=CONCEPTS, agency=agency, version=version, name="Census concepts", items=items)


def cube_components(layout: CubeLayout, concepts: ConceptScheme, lists: dict[str, Codelist]) -> Components:
    """The components of a cube's DSD: its dimensions, TIME_PERIOD, OBS_VALUE and the two attributes."""
    concept = {c.id: c for c in concepts.items}
    comps = [
        Component(id=d.id, required=True, role=Role.DIMENSION, concept=concept[d.id], local_codes=lists[d.id])
        for d in layout.dimensions
    ]
    comps.append(
        Component(id=TIME, required=True, role=Role.DIMENSION, concept=concept[TIME], local_dtype=DataType.PERIOD)
    )
    comps.append(
        Component(id=MEASURE, required=True, role=Role.MEASURE, concept=concept[MEASURE], local_dtype=DataType.INTEGER)
    )
    comps += [
        Component(
            id=a, required=True, role=Role.ATTRIBUTE, concept=concept[a], local_codes=lists[a], attachment_level="O"
        )
        for a in ATTRIBUTES
    ]
    return Components(comps)


def release_structures(layouts: Sequence[CubeLayout]) -> list[Any]:
    """Every artefact of the release's structure message: code lists, concepts, DSDs, dataflows."""
    if not layouts:
        raise ValueError("a structure needs at least one cube")
    agency, version = layouts[0].agency, layouts[0].version
    lists = {**dimension_codelists(layouts), **_attribute_codelists(agency, version)}
    concepts = _concepts(agency, version, lists)
    out: list[Any] = [*lists.values(), concepts]
    for lay in layouts:
        dsd = DataStructureDefinition(
            id=lay.dsd,
            agency=agency,
            version=version,
            name=lay.label,
            components=cube_components(lay, concepts, lists),
        )
        out += [dsd, Dataflow(id=lay.dataflow, agency=agency, version=version, name=lay.label, structure=dsd)]
    return out


def write_structure(layouts: Sequence[CubeLayout], path: Path, prepared: datetime) -> Path:
    """Write the release's structures as an SDMX-ML 3.0 structure message; return ``path``.

    The message header names the agency as sender and ``prepared`` as its time, so the same
    layouts and time give the same file.
    """
    if not layouts:
        raise ValueError("a structure needs at least one cube")
    agency = layouts[0].agency
    header = Header(id=f"{agency}_CENSUS_STRUCTURE", prepared=prepared, sender=Organisation(id=agency))
    path.parent.mkdir(parents=True, exist_ok=True)
    text = write_sdmx(release_structures(layouts), sdmx_format=Format.STRUCTURE_SDMX_ML_3_0, header=header)
    path.write_text(str(text), encoding="utf-8")
    return path


def cube_schema(layout: CubeLayout) -> Schema:
    """The cube's dataflow as a pysdmx schema (what pysdmx's data writers need)."""
    lists = {**dimension_codelists([layout]), **_attribute_codelists(layout.agency, layout.version)}
    concepts = _concepts(layout.agency, layout.version, lists)
    return Schema(
        context="dataflow",
        agency=layout.agency,
        id=layout.dataflow,
        version=layout.version,
        components=cube_components(layout, concepts, lists),
    )
