"""The grammar (spec/grammar.py) rendered: docs/file-format.md's reference tables and the JSON
Schemas caramel ships for editors (`src/caramel/schemas/*.schema.json`).

    python -m caramel.stages.spec.grammar_out --markdown         # the tables, as
    docs/file-format.md holds them python -m caramel.stages.spec.grammar_out --write-docs FILE  #
    replace the tables between their markers python -m caramel.stages.spec.grammar_out --schemas DIR
         # write the four JSON Schemas

The schemas are JSON Schema draft-07 (what the YAML language server reads). A key the grammar does
not know is refused (`additionalProperties: false`), the same key the loader warns about, or refuses
under `--strict`; values stay lenient where a file may write `$parameter` in place of a number.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from caramel.stages.spec.grammar import (
    ELEMENTS,
    IGNORED_KEYS,
    MAD_KEYS,
    SYSTEM_ALIASES,
    SYSTEM_KEYS,
    TAG,
    TARGET_KEYS,
    TARGETS_SYSTEMS_KEY,
    TEXT_KEY,
    YAML_MAPPINGS,
    YAML_ROOT_ONLY,
    Element,
    Key,
)

Schema = dict[str, Any]
SCHEMA_KINDS = ("benchmark", "system", "targets", "models")
SCHEMA_URL = "http://json-schema.org/draft-07/schema#"
SCHEMAS_DIR = Path(__file__).resolve().parents[2] / "schemas"
SCALAR: Schema = {"type": ["string", "number", "boolean", "null"]}
_VALUE: dict[str, Schema] = {
    "text": SCALAR,
    "bool": {"type": ["boolean", "string"]},
    "int": {"type": ["integer", "string"]},
    "number": {"type": ["number", "string"]},
    "duration": {"type": ["number", "string"]},
    # a whole number of at least 1, or auto (spec.limits.parse_repeat)
    "repeat": {
        "anyOf": [
            {"type": "integer", "minimum": 1},
            {"type": "string", "pattern": "^\\s*(0*[1-9][0-9]*|[Aa][Uu][Tt][Oo])\\s*$"},
        ]
    },
    "list": {
        "anyOf": [
            {"type": ["string", "number"]},
            {"type": "array", "items": {"type": ["string", "number"]}},
        ]
    },
    "mapping": {"type": "object"},
}


def schema_path(kind: str) -> Path:
    """The shipped schema of `kind` (benchmark, system, targets, models)."""
    return SCHEMAS_DIR / f"{kind}.schema.json"


def _value(key: Key) -> Schema:
    schema: Schema = {"enum": list(key.choices)} if key.kind == "choice" else dict(_VALUE[key.kind])
    schema["description"] = key.doc + (f" (default: {key.default})" if key.default else "")
    return schema


def _mapping(
    keys: tuple[Key, ...], extra: dict[str, Schema] | None = None, title: str = ""
) -> Schema:
    schema: Schema = {
        "type": "object",
        "properties": {k.name: _value(k) for k in keys},
        "additionalProperties": False,
    }
    schema["properties"].update(extra or {})
    required = [k.name for k in keys if k.required]
    if required:
        schema["required"] = required
    if title:
        schema["description"] = title
    return schema


def _one_or_many(tag: str) -> Schema:
    ref = {"$ref": f"#/definitions/{tag}"}
    return {"anyOf": [ref, {"type": "array", "items": ref}]}


def _element(element: Element) -> Schema:
    """An element as YAML writes it: a mapping of its attributes, children and text (`_`), or a
    plain text where the element is only a text."""
    if element.tag == "meta":
        return _mapping(element.attrs, title=element.doc)
    mapping = _element_mapping(element)
    if element.tag in YAML_MAPPINGS or element.text == "none":
        return mapping
    return {"anyOf": [SCALAR, mapping], "description": element.doc}


def _element_mapping(element: Element) -> Schema:
    """The mapping form of an element: its attributes, children and text (`_`), and the keys real
    files write that JUBE ignores."""
    children = {tag: _one_or_many(tag) for tag in element.child_tags("yaml")}
    if element.text != "none":
        children[TEXT_KEY] = {**SCALAR, "description": "the element's text"}
    mapping = _mapping(element.attrs + (TAG,), children, element.doc)
    for key, why in IGNORED_KEYS.get(element.tag, {}).items():
        mapping["properties"][key] = {"deprecated": True, "description": f"ignored: {why}"}
    if element.text == "required":
        mapping["required"] = sorted(set(mapping.get("required", [])) | {TEXT_KEY})
    return mapping


def benchmark_schema() -> Schema:
    """A YAML benchmark file: one benchmark (the file is its mapping), a list of them, or
    `benchmark:` with global sets beside it."""
    definitions = {tag: _element(e) for tag, e in ELEMENTS.items() if tag not in ("jube", "value")}
    single = _element(ELEMENTS["benchmark"])
    single["properties"].update({tag: _one_or_many(tag) for tag in sorted(YAML_ROOT_ONLY)})
    single.pop(
        "required", None
    )  # an included file may hold a part of a benchmark; the loader checks
    root = _element(ELEMENTS["jube"])
    return {
        "$schema": SCHEMA_URL,
        "title": "caramel (JUBE) benchmark file, YAML",
        "definitions": definitions,
        "anyOf": [
            {"type": "array", "items": {"$ref": "#/definitions/benchmark"}},
            {"if": {"type": "object", "required": ["benchmark"]}, "then": root, "else": single},
        ],
    }


def system_schema() -> Schema:
    mapping = _mapping(SYSTEM_KEYS)
    for alias, name in SYSTEM_ALIASES.items():
        mapping["properties"][alias] = {
            **mapping["properties"][name],
            "description": f"another name for {name}",
        }
    return {"$schema": SCHEMA_URL, "title": "caramel system file", **mapping}


def targets_schema() -> Schema:
    """A targets file: `systems: {SYSTEM: {BENCHMARK: reference}}`, or the flat `{BENCHMARK:
    reference}`."""
    number = {"type": "number"}
    mapping = _mapping(TARGET_KEYS)
    reference = {"anyOf": [number, {"type": "array", "minItems": 1, "maxItems": 4}, mapping]}
    max_sd = {k.name: _value(k) for k in TARGET_KEYS if k.name == "max_sd"}
    per_figure = {
        "type": "object",
        "properties": max_sd,
        "additionalProperties": {"$ref": "#/definitions/reference"},
    }
    entry = {
        "anyOf": [
            number,
            {"type": "array"},
            {"if": {"type": "object", "required": ["value"]}, "then": mapping, "else": per_figure},
        ]
    }
    benchmarks = {"type": "object", "additionalProperties": {"$ref": "#/definitions/entry"}}
    return {
        "$schema": SCHEMA_URL,
        "title": "caramel targets file",
        "definitions": {"reference": reference, "entry": entry},
        "if": {"type": "object", "required": [TARGETS_SYSTEMS_KEY]},
        "then": {
            "type": "object",
            "properties": {
                TARGETS_SYSTEMS_KEY: {"type": "object", "additionalProperties": benchmarks}
            },
            "additionalProperties": False,
        },
        "else": benchmarks,
    }


def models_schema() -> Schema:
    return {
        "$schema": SCHEMA_URL,
        "title": "MAD models.json (as caramel reads it)",
        "type": "array",
        "items": _mapping(MAD_KEYS),
    }


def schema(kind: str) -> Schema:
    return {
        "benchmark": benchmark_schema,
        "system": system_schema,
        "targets": targets_schema,
        "models": models_schema,
    }[kind]()


def schema_text(kind: str) -> str:
    return json.dumps(schema(kind), indent=1, ensure_ascii=False) + "\n"


# --- markdown -------------------------------------------------------------------------------------
def _cell(key: Key, in_caramel: bool) -> str:
    """`name` (the default; a choice's other values, required, *caramel*)."""
    notes = _notes(key, in_caramel)
    return f"`{key.name}`" + (f" ({', '.join(notes)})" if notes else "")


def _notes(key: Key, in_caramel: bool) -> list[str]:
    default = _default_note(key)
    notes = [default] if default else []
    if key.required:
        notes.append("required")
    if key.caramel and not in_caramel:
        notes.append("*caramel*")
    return notes


def _other_choices(key: Key) -> str:
    """A choice's values other than its default."""
    if key.kind != "choice":
        return ""
    return ", ".join(c for c in key.choices if c != key.default)


def _default_note(key: Key) -> str:
    """The default, then a choice's other values."""
    values = _other_choices(key)
    if key.default and values:
        return f"{key.default}; {values}"
    return key.default or values


def elements_table() -> str:
    rows = [
        "| element | attributes (default; other values) | children | meaning |",
        "|---|---|---|---|",
    ]
    for element in ELEMENTS.values():
        mark = " *(caramel)*" if element.caramel else ""
        attrs = ", ".join(_cell(k, element.caramel) for k in element.attrs)
        children = ", ".join(
            f"`{c.tag}`" + (f" ({c.only} only)" if c.only != "both" else "")
            for c in element.children
        )
        text = {"none": "", "optional": "; may hold a text", "required": "; its text is required"}[
            element.text
        ]
        rows.append(f"| `{element.tag}`{mark} | {attrs} | {children} | {element.doc}{text} |")
    return "\n".join(rows) + "\n\nEvery element also takes `tag` (a tag expression).\n"


def keys_table(keys: tuple[Key, ...]) -> str:
    rows = ["| key | kind | default | meaning |", "|---|---|---|---|"]
    for key in keys:
        kind = " / ".join(key.choices) if key.choices else key.kind
        rows.append(
            f"| `{key.name}` | {kind} | {key.default or ''} | "
            f"{key.doc}{' (required)' if key.required else ''} |"
        )
    return "\n".join(rows) + "\n"


def system_table() -> str:
    return keys_table(SYSTEM_KEYS)


def targets_table() -> str:
    return keys_table(TARGET_KEYS)


def models_table() -> str:
    return keys_table(MAD_KEYS)


TABLES: dict[str, Callable[[], str]] = {
    "elements": elements_table,
    "system": system_table,
    "targets": targets_table,
    "models": models_table,
}
_BLOCK = re.compile(r"(<!-- grammar:(\w+) -->\n).*?(<!-- /grammar:\2 -->)", re.S)


def with_tables(doc: str) -> str:
    """`doc` with every block between `<!-- grammar:NAME -->` and `<!-- /grammar:NAME -->`
    regenerated."""

    def regenerated(match: re.Match[str]) -> str:
        return match.group(1) + TABLES[match.group(2)]() + match.group(3)

    return _BLOCK.sub(regenerated, doc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m caramel.stages.spec.grammar_out", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--markdown", action="store_true", help="print the reference tables")
    parser.add_argument("--write-docs", metavar="FILE", help="regenerate the tables inside FILE")
    parser.add_argument("--schemas", metavar="DIR", help="write the JSON Schemas into DIR")
    args = parser.parse_args(argv)
    if args.markdown:
        _print_tables()
    if args.write_docs:
        path = Path(args.write_docs)
        path.write_text(with_tables(path.read_text(encoding="utf-8")), encoding="utf-8")
    if args.schemas:
        _write_schemas(Path(args.schemas))
    return 0


def _print_tables() -> None:
    for name, table in TABLES.items():
        sys.stdout.write(f"<!-- grammar:{name} -->\n{table()}<!-- /grammar:{name} -->\n\n")


def _write_schemas(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for kind in SCHEMA_KINDS:
        (folder / f"{kind}.schema.json").write_text(schema_text(kind), encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
