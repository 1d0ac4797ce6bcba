"""Generate the config reference (Markdown) and the JSON Schema from the pydantic models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cubeguard.config.models import ReleaseConfig, VariableFile
from cubeguard.cubes.spec import HrcCodes


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a release config (editors use it to check YAML while it is written)."""
    schema = ReleaseConfig.model_json_schema()
    defs = schema.setdefault("$defs", {})
    # Forms the loader expands before validation: a variable in its own file, codes from a .hrc file.
    defs["VariableFile"] = VariableFile.model_json_schema()
    defs["HrcCodes"] = HrcCodes.model_json_schema()
    schema["properties"]["variables"]["additionalProperties"] = {
        "anyOf": [{"$ref": "#/$defs/VariableSpec"}, {"$ref": "#/$defs/VariableFile"}]
    }
    codes = defs["VariableSpec"]["properties"]["codes"]
    defs["VariableSpec"]["properties"]["codes"] = {
        "anyOf": [codes, {"$ref": "#/$defs/HrcCodes"}],
        "description": codes.get("description", ""),
    }
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "cubeguard release config"
    return schema


def markdown() -> str:
    """A Markdown reference: one section per model, one row per key."""
    schema = json_schema()
    defs = schema.get("$defs", {})
    parts = [
        "# Release config reference",
        "",
        "Generated from the pydantic models by `cubeguard schema`; do not edit by hand.",
        "JSON Schema: [release-config.schema.json](release-config.schema.json). Variables may also be",
        "given as `{file: path}` pointing to a classification file ([format](classification-format.md)).",
        "A key given twice in one mapping is an error (both lines are named); YAML merge keys",
        "(`<<: *defaults`) share settings between steps, and keys written beside them win.",
        "",
    ]
    for name, model in [("ReleaseConfig", schema), *sorted(defs.items())]:
        parts += [
            f"## {name}",
            "",
            (model.get("description") or "").strip(),
            "",
            "| key | type | required | default | description |",
            "| --- | --- | --- | --- | --- |",
        ]
        required = set(model.get("required", []))
        for key, prop in model.get("properties", {}).items():
            default = json.dumps(prop["default"]) if "default" in prop else ""
            parts.append(
                f"| `{key}` | {_type(prop)} | {'yes' if key in required else ''} | {default} | "
                f"{prop.get('description', '')} |"
            )
        parts.append("")
    return "\n".join(parts)


def _type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        return str(prop["$ref"]).split("/")[-1]
    if "anyOf" in prop:
        return " or ".join(_type(p) for p in prop["anyOf"])
    if "oneOf" in prop:
        return " or ".join(_type(p) for p in prop["oneOf"])
    if prop.get("type") == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if prop.get("type") == "object":
        extra = prop.get("additionalProperties")
        return f"map of {_type(extra)}" if isinstance(extra, dict) else "map"
    if "const" in prop:
        return f"`{prop['const']}`"
    if "enum" in prop:
        return " / ".join(f"`{e}`" for e in prop["enum"])
    return str(prop.get("type", "any"))


def write_reference(schema_file: Path) -> Path:
    """Write the JSON Schema to ``schema_file`` and the Markdown reference beside it."""
    schema_file.parent.mkdir(parents=True, exist_ok=True)
    schema_file.write_text(json.dumps(json_schema(), indent=2) + "\n", encoding="utf-8")
    md = schema_file.parent / "config-reference.md"
    md.write_text(markdown() + "\n", encoding="utf-8")
    return md
