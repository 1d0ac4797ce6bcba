"""The OpenAPI description of ``/api/table`` and ``/api/cubes``, whose parameters the service reads itself.

The endpoints read the query string and body themselves (:mod:`cubeguard.tables.request`), so
that every malformed query is refused with a rule and a parameter rather than by FastAPI; this
module describes what they read, with the caps.
"""

from __future__ import annotations

from typing import Any

from cubeguard.tables.query import MAX_BREAKDOWNS, MAX_CODE, MAX_FILTERS, MAX_ID, TableQuery
from cubeguard.tables.request import FORMATS, MAX_BODY_BYTES, MAX_QUERY_BYTES


def _param(name: str, schema: dict[str, Any], description: str, required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": description}


_ID = {"type": "string", "minLength": 1, "maxLength": MAX_ID}
_FORMAT = _param(
    "format",
    {"type": "string", "enum": list(FORMATS), "default": "json"},
    "json (JSON-stat 2.0), csv, sdmx-csv or xlsx (one sheet: code and label columns, count, mean)",
)
_REFUSAL = {
    "description": "Refused: the rule, the parameter to change and what to change "
    f"(422; 414 for a query string over {MAX_QUERY_BYTES:,} bytes, 413 for a body over {MAX_BODY_BYTES:,}; "
    "429 over the rate limit)",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {
                    "refused": {"type": "boolean"},
                    "rule": {"type": "string"},
                    "parameter": {"type": ["string", "null"]},
                    "message": {"type": "string"},
                },
            }
        }
    },
}
_RESPONSES = {"422": _REFUSAL}

GET_TABLE: dict[str, Any] = {
    "parameters": [
        _param(
            "breakdowns",
            {"type": "array", "items": {"type": "string", "maxLength": MAX_ID * MAX_BREAKDOWNS}},
            f"Breakdown ids, comma-separated (GEO.N,SEX,AGE.H) or repeated, in order; at most {MAX_BREAKDOWNS}, "
            "each given once",
            required=True,
        ),
        _param("population", {**_ID, "default": "total"}, "An offered population"),
        _param(
            "filter",
            {"type": "array", "maxItems": MAX_FILTERS, "items": {"type": "string", "maxLength": MAX_ID + 1 + MAX_CODE}},
            "BREAKDOWN:CODE, repeatable (each breakdown once)",
        ),
        _param("mean", _ID, "An offered numeric column whose cell means the table adds"),
        _param(
            "per_area",
            {"type": "string", "enum": ["true", "false"], "default": "false"},
            "true: judge each code of the first breakdown (an area) on its own, as a table filtered to it; "
            "areas that break a rule are withheld (null, named with the rule in extension.withheld), the rest served",
        ),
        _FORMAT,
    ],
    "responses": _RESPONSES,
}
POST_TABLE: dict[str, Any] = {
    "parameters": [_FORMAT],
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": TableQuery.model_json_schema()}},
        "description": f"The query as a JSON object (at most {MAX_BODY_BYTES:,} bytes; each key once)",
    },
    "responses": _RESPONSES,
}
_CUBE = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "label": {"type": "string"},
        "population": {"type": "string"},
        "breakdowns": {"type": "array", "items": {"type": "string"}},
    },
}
GET_CUBES: dict[str, Any] = {
    "description": "The release's published cubes whose population and breakdowns the service offers and whose "
    "form passes the rules, in the config's order; each opens as GET /api/table?breakdowns=...&population=... "
    "(no parameters: any is refused)",
    "responses": {
        "200": {
            "description": "The cubes",
            "content": {"application/json": {"schema": {"type": "array", "items": _CUBE}}},
        },
        "422": _REFUSAL,
    },
}
