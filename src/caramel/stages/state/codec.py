"""The benchmark model as typed JSON: what a run stores to be continued, and nothing executable.

`encode` turns the model's dataclasses into plain JSON values; `decode` builds them back, checking
each value against the field's type hint (a run folder may sit in a shared project folder: what
its database holds is data to check, never code to run, which a pickle would be). Fields a newer
model added are filled with their defaults; unknown fields and wrong types are refused.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import types
import typing
from typing import Any, TypeVar

from caramel.adapters.systems.model import System
from caramel.errors import Location
from caramel.stages.spec import model
from caramel.stages.spec.system import SystemFacts
from caramel.stages.state import bounded


class CodecError(ValueError):
    """The stored model does not match the model of this caramel."""


T = TypeVar("T")

# Fields renamed or dropped since runs were stored: {class: {stored name: field, or None}} (a run made
# before still continues).
_RENAMED: dict[str, dict[str, str | None]] = {"FileEntry": {"kind": "action"}, "Table": {"kind": "output"},
                                              "Use": {"from_file": None},
                                              "System": {"extra_sbatch": "scheduler_options"}}

# Classes a field typed `SystemFacts` (a protocol: Benchmark.system) may hold, by name.
_OPEN_FIELDS = {"System": System}


def dumps(obj: object) -> str:
    return json.dumps(encode(obj), separators=(",", ":"))


def loads(text: str | bytes, cls: type[T], where: str = "the stored model") -> T:
    """`cls` decoded from JSON that is size- and depth-bounded first (state.bounded)."""
    try:
        data = bounded.loads(text, where)
    except bounded.OverLimit as exc:
        raise CodecError(exc.message) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise CodecError(f"not JSON: {exc}") from None
    out = decode(cls, data, cls.__name__)
    assert isinstance(out, cls)  # decode builds the class its hint names
    return out


def encode(obj: object) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return out
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj) if isinstance(obj, (set, frozenset)) else obj
        return [encode(v) for v in items]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise CodecError(f"cannot store a {type(obj).__name__}")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(model) | {"Location": Location, "System": System})


def decode(hint: Any, data: Any, where: str) -> Any:  # noqa: C901 - one case per kind of type
    origin = typing.get_origin(hint)
    if hint is Any:
        return data
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if data is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return decode(option, data, where)
            except CodecError as exc:
                errors.append(str(exc))
        raise CodecError("; ".join(errors))
    if hint is SystemFacts:
        if data is None:
            return None
        if not isinstance(data, dict) or data.get("__class__") not in _OPEN_FIELDS:
            raise CodecError(f"{where}: an object of unknown class")
        body = {k: v for k, v in data.items() if k != "__class__"}
        return decode(_OPEN_FIELDS[data["__class__"]], body, where)
    if origin in (list, set, frozenset, tuple):
        if not isinstance(data, list):
            raise CodecError(f"{where}: a list was expected")
        args = typing.get_args(hint)
        item = args[0] if args else Any
        values = [decode(item, v, f"{where}[{i}]") for i, v in enumerate(data)]
        return origin(values)
    if origin is dict:
        if not isinstance(data, dict):
            raise CodecError(f"{where}: a mapping was expected")
        _key, value = typing.get_args(hint) or (str, Any)
        return {k: decode(value, v, f"{where}.{k}") for k, v in data.items()}
    if dataclasses.is_dataclass(hint):
        return _decode_dataclass(hint, data, where)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):  # a vocabulary's word, stored as its text
        try:
            return hint(data)
        except ValueError:
            raise CodecError(f"{where}: {data!r} is not one of {', '.join(repr(w.value) for w in hint)}") from None
    if hint in (str, int, float, bool):
        ok = isinstance(data, hint) and (hint is bool or not isinstance(data, bool)) or (
            hint is float and isinstance(data, int) and not isinstance(data, bool))
        if not ok:
            raise CodecError(f"{where}: a {hint.__name__} was expected, not {type(data).__name__}")
        return data
    raise CodecError(f"{where}: cannot read a {hint}")


def _decode_dataclass(cls: Any, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise CodecError(f"{where}: a {cls.__name__} was expected")
    hints = _hints(cls)
    renamed = _RENAMED.get(cls.__name__, {})
    data = {renamed.get(key, key): value for key, value in data.items() if renamed.get(key, key) is not None}
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = set(data) - names
    if unknown:
        raise CodecError(f"{where}: unknown fields {sorted(unknown)}")
    kwargs = {name: decode(hints[name], value, f"{where}.{name}") for name, value in data.items()}
    try:
        return cls(**kwargs)
    except TypeError as exc:  # a required field missing
        raise CodecError(f"{where}: {exc}") from None


def encode_model(bench: model.Benchmark) -> str:
    """The benchmark as JSON (its system, a protocol's field, carries its class name)."""
    data = encode(bench)
    if bench.system is not None:
        data["system"] = dict(encode(bench.system), __class__=type(bench.system).__name__)
    return json.dumps(data, separators=(",", ":"))


def decode_model(text: str | bytes, where: str = "the stored model") -> model.Benchmark:
    return loads(text, model.Benchmark, where)
