"""Checks JSON values against worker/protocol.schema.json, the worker protocol's one
description. Knows the keywords that file uses (its $comment lists them) and fails on any other,
so the schema cannot grow a rule these tests silently skip."""

import json
from pathlib import Path
from typing import Any, Dict, List

SCHEMA_PATH: Path = Path(__file__).resolve().parents[2] / "worker" / "protocol.schema.json"
SCHEMA: Dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
_ANNOTATIONS = {"$comment", "default"}
_KEYWORDS = {"type", "enum", "properties", "required", "additionalProperties", "items", "minItems", "minimum",
             "anyOf", "$ref"} | _ANNOTATIONS


def definition(name: str) -> Dict[str, Any]:
    return SCHEMA["$defs"][name]


def _is(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    raise ValueError(f"unknown type {kind!r} in the schema")


def errors(value: Any, schema: Dict[str, Any], where: str = "$") -> List[str]:
    """Every way `value` breaks `schema`, as "where: what" lines; empty when it conforms."""
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise ValueError(f"{where}: schema keywords {sorted(unknown)} are not checked by these tests")
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/"), ref
        found = errors(value, definition(ref[len("#/$defs/"):]), where)
        if found:
            return found
    if "anyOf" in schema:
        options = [errors(value, option, where) for option in schema["anyOf"]]
        if all(options):
            return [f"{where}: matches none of anyOf: " + "; ".join(o[0] for o in options)]
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_is(value, k) for k in kinds):
            return [f"{where}: {type(value).__name__} {value!r:.60} is not {'/'.join(kinds)}"]
    found: List[str] = []
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and _is(value, "number") and value < schema["minimum"]:
        found.append(f"{where}: {value} is below {schema['minimum']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            found.append(f"{where}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                found += errors(item, schema["items"], f"{where}[{i}]")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        found += [f"{where}: {key} is missing" for key in schema.get("required", []) if key not in value]
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                found += errors(item, properties[key], f"{where}.{key}")
            elif extra is False:
                found.append(f"{where}: {key} is not a field of the protocol")
            elif isinstance(extra, dict):
                found += errors(item, extra, f"{where}.{key}")
    return found


def response_errors(response: Any) -> List[str]:
    return errors(response, definition("response"))


def request_errors(request: Any) -> List[str]:
    return errors(request, definition("request"))
