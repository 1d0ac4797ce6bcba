"""A Frictionless Data Package describing a release's CSV exports: which columns are codes, which counts.

CSV has no types, so a reader guesses them: pandas reads SEX's codes ``1``, ``2`` as integers and
``2.1`` as a float, which loses codes (``2.10`` and ``2.1``) and their order. The release publishes
``exports/datapackage.json`` (Frictionless Data, Tabular Data Package v1,
https://specs.frictionlessdata.io/tabular-data-package/) beside its CSV files: one resource per
cube, each code column of type ``string`` (with its breakdown's name as title), ``count`` of type
``integer`` (minimum 0), each published sum ``sum.<column>`` (a cube's ``sums``) of type ``number``, and
the code columns as primary key. Tools that read data packages
(frictionless-py, the R package frictionless) read codes as strings from it; a pandas user passes
``dtype`` from it (see the README).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cubeguard.config.load import Release

NAME = "datapackage.json"
_NOT_NAME = re.compile(r"[^a-z0-9._-]")


def package_name(text: str) -> str:
    """A Data Package name: lower case letters, digits, ``.``, ``_`` and ``-``."""
    return _NOT_NAME.sub("-", text.lower()) or "release"


def csv_resource(release: Release, cube_id: str, path: str) -> dict[str, Any]:
    """The resource of cube ``cube_id``'s CSV file ``path`` (relative to the package)."""
    cube = release.cube(cube_id)
    fields: list[dict[str, Any]] = []
    for b in cube.breakdowns:
        cls = release.breakdowns[b].classification
        title = release.config.variables[cls.variable].label or cls.variable
        fields.append({"name": b, "type": "string", "title": f"{title} ({b})", "constraints": {"required": True}})
    fields.append({"name": "count", "type": "integer", "title": "Published count", "constraints": {"minimum": 0}})
    for column in cube.sums:
        fields.append({"name": f"sum.{column}", "type": "number", "title": f"Published sum of {column} (perturbed)"})
    return {
        "name": package_name(f"cube-{cube_id}"),
        "title": cube.label or f"Hypercube {cube_id}",
        "path": path,
        "profile": "tabular-data-resource",
        "format": "csv",
        "mediatype": "text/csv",
        "encoding": "utf-8",
        "schema": {"fields": fields, "primaryKey": list(cube.breakdowns), "missingValues": []},
    }


def write_data_package(folder: Path, release: Release, cube_ids: Sequence[str]) -> Path:
    """Write ``folder/datapackage.json`` for the CSV files ``<cube>.csv`` of ``cube_ids`` in ``folder``."""
    package = {  # the release id is in the manifest: the exports of one release are the same bytes under any id
        "profile": "tabular-data-package",
        "name": package_name(release.config.name),
        "title": release.config.description or release.config.name,
        "resources": [csv_resource(release, c, f"{c}.csv") for c in cube_ids],
    }
    target = folder / NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(package, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return target
