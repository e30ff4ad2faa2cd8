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
from collections.abc import Callable
from typing import Any, TypeVar

from caramel.adapters.systems.model import System
from caramel.errors import Location
from caramel.stages.spec import model
from caramel.stages.spec.system import SystemFacts
from caramel.stages.state import bounded


class CodecError(ValueError):
    """The stored model does not match the model of this caramel."""


T = TypeVar("T")

# Fields renamed or dropped since runs were stored: {class: {stored name: field, or None}} (a run
# made before still continues).
_RENAMED: dict[str, dict[str, str | None]] = {
    "FileEntry": {"kind": "action"},
    "Table": {"kind": "output"},
    "Use": {"from_file": None},
    "System": {"extra_sbatch": "scheduler_options"},
}

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


@functools.singledispatch
def encode(obj: object) -> Any:
    """`obj` as JSON's data: a dataclass as a mapping of its fields, a set sorted; one case per
    kind of value (registered below)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {name: encode(getattr(obj, name)) for name in _field_names(type(obj))}
    raise CodecError(f"cannot store a {type(obj).__name__}")


@encode.register(str)
@encode.register(int)  # and bool
@encode.register(float)
@encode.register(type(None))
def _encode_plain(obj: object) -> Any:
    return obj


@encode.register(dict)
def _encode_mapping(obj: dict[Any, Any]) -> Any:
    return {str(k): encode(v) for k, v in obj.items()}


@encode.register(list)
@encode.register(tuple)
def _encode_sequence(obj: list[Any] | tuple[Any, ...]) -> Any:
    return [encode(v) for v in obj]


@encode.register(set)
@encode.register(frozenset)
def _encode_set(obj: set[Any] | frozenset[Any]) -> Any:
    return [encode(v) for v in sorted(obj)]


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(model) | {"Location": Location, "System": System})


Decoder = Callable[[Any, str], Any]


def decode(hint: Any, data: Any, where: str) -> Any:
    """`data` read as `hint` (checked on the way); a CodecError names `where` and what was expected.
    Each hint's reader is made once a process (_reader): a run's engine decodes the stored model
    (about 1,900 values) as it starts, and a lookup per value would repeat the same work."""
    try:
        read = _reader(hint)
    except TypeError:  # an unhashable hint: made for this value alone
        read = _make_reader(hint)
    return read(data, where)


@functools.cache
def _reader(hint: Any) -> Decoder:
    return _make_reader(hint)


def _make_reader(hint: Any) -> Decoder:
    """The reader of one kind of type: a generic alias's (a union, a sequence, a mapping), else a
    class's."""
    reader = _generic_reader(hint) or _class_reader(hint)
    if reader is not None:
        return reader

    def unreadable(data: Any, where: str) -> Any:
        raise CodecError(f"{where}: cannot read a {hint}")

    return unreadable


def _generic_reader(hint: Any) -> Decoder | None:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return _union_reader(args)
    if origin in (list, set, frozenset, tuple):
        return _sequence_reader(origin, args[0] if args else Any)
    if origin is dict:
        return _mapping_reader((args or (str, Any))[1])
    return None


def _class_reader(hint: Any) -> Decoder | None:
    if hint is Any:
        return _as_it_is
    if hint is SystemFacts:
        return _open_reader
    if dataclasses.is_dataclass(hint):
        return _DataclassReader(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):  # a word, stored as its text
        return _enum_reader(hint)
    return _plain_reader(hint) if hint in (str, int, float, bool) else None


def _as_it_is(data: Any, where: str) -> Any:
    return data


def _union_reader(options: tuple[Any, ...]) -> Decoder:
    optional = type(None) in options
    choices = [option for option in options if option is not type(None)]

    def read(data: Any, where: str) -> Any:
        if data is None and optional:
            return None
        errors = []
        for option in choices:
            try:
                return decode(option, data, where)
            except CodecError as exc:
                errors.append(str(exc))
        raise CodecError("; ".join(errors))

    return read


def _open_reader(data: Any, where: str) -> Any:
    if data is None:
        return None
    if not isinstance(data, dict) or data.get("__class__") not in _OPEN_FIELDS:
        raise CodecError(f"{where}: an object of unknown class")
    body = {k: v for k, v in data.items() if k != "__class__"}
    return decode(_OPEN_FIELDS[data["__class__"]], body, where)


def _sequence_reader(origin: Any, item: Any) -> Decoder:
    def read(data: Any, where: str) -> Any:
        if not isinstance(data, list):
            raise CodecError(f"{where}: a list was expected")
        read_item = _reader_of(item)
        return origin([read_item(v, f"{where}[{i}]") for i, v in enumerate(data)])

    return read


def _mapping_reader(value: Any) -> Decoder:
    def read(data: Any, where: str) -> Any:
        if not isinstance(data, dict):
            raise CodecError(f"{where}: a mapping was expected")
        read_value = _reader_of(value)
        return {k: read_value(v, f"{where}.{k}") for k, v in data.items()}

    return read


def _enum_reader(hint: type[enum.Enum]) -> Decoder:
    def read(data: Any, where: str) -> Any:
        try:
            return hint(data)
        except ValueError:
            raise CodecError(
                f"{where}: {data!r} is not one of {', '.join(repr(w.value) for w in hint)}"
            ) from None

    return read


def _plain_reader(hint: type) -> Decoder:
    def read(data: Any, where: str) -> Any:
        ok = (
            isinstance(data, hint)
            and (hint is bool or not isinstance(data, bool))
            or (hint is float and isinstance(data, int) and not isinstance(data, bool))
        )
        if not ok:
            raise CodecError(f"{where}: a {hint.__name__} was expected, not {type(data).__name__}")
        return data

    return read


def _reader_of(hint: Any) -> Decoder:
    try:
        return _reader(hint)
    except TypeError:
        return _make_reader(hint)


class _DataclassReader:
    """A dataclass from its stored fields; its hints and field readers looked up on first use (a
    class may hold itself, and a hint nothing reads must not fail the others)."""

    def __init__(self, cls: Any) -> None:
        self.cls = cls
        self.renamed = _RENAMED.get(cls.__name__, {})
        self.names = frozenset(f.name for f in dataclasses.fields(cls) if f.init)
        self.fields: dict[str, Decoder] = {}

    def __call__(self, data: Any, where: str) -> Any:
        cls = self.cls
        if not isinstance(data, dict):
            raise CodecError(f"{where}: a {cls.__name__} was expected")
        renamed = self.renamed
        if renamed:
            data = {
                renamed.get(key, key): value
                for key, value in data.items()
                if renamed.get(key, key) is not None
            }
        unknown = data.keys() - self.names
        if unknown:
            raise CodecError(f"{where}: unknown fields {sorted(unknown)}")
        kwargs = {name: self._field(name)(value, f"{where}.{name}") for name, value in data.items()}
        try:
            return cls(**kwargs)
        except TypeError as exc:  # a required field missing
            raise CodecError(f"{where}: {exc}") from None

    def _field(self, name: str) -> Decoder:
        read = self.fields.get(name)
        if read is None:
            read = self.fields[name] = _reader_of(_hints(self.cls)[name])
        return read


def encode_model(bench: model.Benchmark) -> str:
    """The benchmark as JSON (its system, a protocol's field, carries its class name)."""
    data = encode(bench)
    if bench.system is not None:
        data["system"] = dict(encode(bench.system), __class__=type(bench.system).__name__)
    return json.dumps(data, separators=(",", ":"))


def decode_model(text: str | bytes, where: str = "the stored model") -> model.Benchmark:
    return loads(text, model.Benchmark, where)
