"""Finding and reading system files, with errors that name the file and line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from caramel.adapters.backends import schedulers
from caramel.adapters.containers.runtime import RUNTIMES
from caramel.adapters.systems.model import ALWAYS, System
from caramel.errors import Location, SpecError, did_you_mean
from caramel.fs.paths import PathError, name
from caramel.payloads.measure import METHODS, NO_METHOD
from caramel.resources import shipped
from caramel.settings import current
from caramel.stages.spec.grammar import SYSTEM_ALIASES, SYSTEM_KEYS, Kind
from caramel.stages.spec.limits import array_setting
from caramel.stages.spec.yaml_reader import read_text

SHIPPED = shipped("systems")
_KEYS = {
    key.name: key for key in SYSTEM_KEYS
}  # the grammar's settings of a system file, with their kinds
ALIASES = SYSTEM_ALIASES  # other names for a setting (grammar.SYSTEM_ALIASES)


def search_path(extra: list[str] | None = None) -> list[Path]:
    folders = [Path(p) for p in (extra or [])]
    folders += [Path(p) for p in current().systems_path]
    return folders + [SHIPPED]


def system_names(extra: list[str] | None = None) -> list[str]:
    names: list[str] = []
    for folder in search_path(extra):
        if folder.is_dir():
            names += [p.stem for p in sorted(folder.glob("*.yaml")) if p.stem not in names]
    return names


def is_name(tag: str) -> bool:
    try:
        name(tag, "tag", "a systems folder")
    except PathError:
        return False
    return True


def find_system(tags: set[str], extra: list[str] | None = None) -> System | None:
    """The system named by one of `tags` (a tag naming two systems is an error), or None."""
    found = [path for path in (_system_file(tag, extra) for tag in sorted(tags)) if path]
    if len(found) > 1:
        raise _two_systems(found)
    return load_system(found[0]) if found else None


def _two_systems(found: list[Path]) -> SpecError:
    return SpecError(
        f"the tags name {len(found)} systems: {', '.join(p.stem for p in found)}",
        hint="give one system tag per run (" + ", ".join(str(p) for p in found) + ")",
    )


def _system_file(tag: str, extra: list[str] | None) -> Path | None:
    """The first system file named `tag` on the search path, or None."""
    if not is_name(tag):  # a tag holding / or .. names no file of a systems folder (fs.paths)
        return None
    files = (folder / f"{tag}.yaml" for folder in search_path(extra))
    return next((path for path in files if path.is_file()), None)


def _line(node: yaml.Node | None, key: str) -> int:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == key:
                line: int = v.start_mark.line  # PyYAML ships no type information
                return line + 1
    return node.start_mark.line + 1 if node is not None else 0


def _parse(text: str, loader_class: type) -> tuple[yaml.Node | None, object]:
    """The node tree (for line numbers) and its values, from one parse."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return node, loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


def load_system(path: Path | str) -> System:
    path = Path(path)
    node, data = _read_yaml(path)
    values: dict[str, Any] = {"name": path.stem}  # each setting of its kind (_check)
    for key, value in data.items():
        at = Location(str(path), _line(node, str(key)))
        name = _setting_name(str(key), data, at)
        values[name] = _check(str(key), value, _KEYS[name].kind, at)
    if values["name"] != path.stem:
        raise SpecError(
            f"name '{values['name']}' differs from the file name '{path.stem}'",
            Location(str(path), _line(node, "name")),
            hint="the tag that selects a system is its file name",
        )
    if "job_array" in values:
        values["job_array"] = _job_array(
            values["job_array"], Location(str(path), _line(node, "job_array"))
        )
    _check_known(values, path, node)
    where = Location(str(path), 1)
    return System(**values, given=frozenset(values) | ALWAYS, file=str(path), where=where)


def _read_yaml(path: Path) -> tuple[yaml.Node | None, dict[Any, Any]]:
    """The system file's node tree and its mapping; a SpecError at the line where it is no YAML
    mapping."""
    text = read_text(str(path))
    try:
        # libyaml's parser where PyYAML has it; a refused file again in Python, for its message
        try:
            node, data = _parse(text, getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError:
            node, data = _parse(text, yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise SpecError(
            f"not valid YAML: {getattr(exc, 'problem', exc)}",
            Location(str(path), mark.line + 1 if mark else 0),
        ) from None
    if not isinstance(data, dict):
        raise SpecError(
            "a system file is a mapping of settings",
            Location(str(path), 1),
            hint="for example: scheduler: slurm, partition: gpu, account: myproject",
        )
    return node, data


def _setting_name(key: str, data: dict[Any, Any], at: Location) -> str:
    """The setting `key` names (an alias gives its setting's name); a SpecError for an unknown one
    or one given under two names."""
    name = ALIASES.get(key, key)
    if name not in _KEYS:
        raise SpecError(
            f"unknown setting '{key}' in system file",
            at,
            hint=did_you_mean(key, _KEYS) or "settings: " + ", ".join(_KEYS),
        )
    if name != key and name in data:
        raise SpecError(f"'{key}' and '{name}' are one setting: give one of them", at)
    return name


def _job_array(value: str, at: Location) -> str:
    """The job_array setting as caramel keeps it: "true", "false" or a whole number of tasks at
    once (limits.array_setting)."""
    setting = array_setting(value)
    if setting is None:
        raise SpecError(
            f"job_array: '{value}' is neither true, false nor a whole number",
            at,
            hint="job_array: true makes every submit step one job array; job_array: 8 runs "
            "at most 8 of its tasks at once",
        )
    return setting


def _check_known(values: dict[str, Any], path: Path, node: yaml.Node | None) -> None:
    """A SpecError for a setting naming a scheduler, runtime or energy method that is not known."""
    for key, allowed in known_values().items():
        if key in values and values[key] not in allowed:
            raise _unknown_value(key, values[key], allowed, Location(str(path), _line(node, key)))


def _unknown_value(key: str, value: str, allowed: list[str], at: Location) -> SpecError:
    return SpecError(
        f"{key}: '{value}' is not known",
        at,
        hint=did_you_mean(value, allowed)
        or "expected one of " + ", ".join(a or "''" for a in allowed),
    )


def known_values() -> dict[str, list[str]]:
    """The values a system file may give the settings that name a registered thing: schedulers from
    their registry, container runtimes and energy methods from their own packages ('' : none)."""
    return {
        "scheduler": schedulers.names(),
        "container_runtime": ["", *RUNTIMES],
        "energy_method": ["", NO_METHOD, *METHODS],
    }


def _check(key: str, value: object, kind: Kind, at: Location) -> object:
    """The setting's value as its kind wants it; a SpecError saying what was expected."""
    return _CHECKS.get(kind, _text)(key, value, at)


def _whole_number(key: str, value: object, at: Location) -> object:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(f"{key}: expected a whole number, got {value!r}", at)
    return value


def _number(key: str, value: object, at: Location) -> object:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise SpecError(f"{key}: expected a number, got {value!r}", at)
    return float(value)


def _texts(key: str, value: object, at: Location) -> object:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise SpecError(f"{key}: expected a list of texts", at)
    return [str(v) for v in value]


def _mapping(key: str, value: object, at: Location) -> object:
    if not isinstance(value, dict):
        raise SpecError(f"{key}: expected a mapping NAME: VALUE", at)
    return {str(k): str(v) for k, v in value.items()}


def _text(key: str, value: object, at: Location) -> object:
    if isinstance(value, (dict, list)):
        kind = "mapping" if isinstance(value, dict) else "list"
        raise SpecError(f"{key}: expected a text, got a {kind}", at)
    return "" if value is None else str(value)


_CHECKS: dict[str, Callable[[str, object, Location], object]] = {
    "int": _whole_number,
    "number": _number,
    "list": _texts,
    "mapping": _mapping,
}  # the kinds of setting a system file gives other than text
