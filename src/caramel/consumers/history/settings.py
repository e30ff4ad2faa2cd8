"""The user's settings of the history: where it lives and where its rows are also sent.

A YAML file, `$CARAMEL_SETTINGS`, else `settings.yaml` in the user's data folder:

    history: postgresql://bench@db.example.org/caramel    # or a file; $CARAMEL_HISTORY wins
    sinks:                                                   # $CARAMEL_SINKS adds to these
      - {shape: elasticsearch, url: "http://es:9200/_bulk", index: caramel}
      - {shape: gelf, url: "http://graylog:12201/gelf"}
      - {shape: json, url: "https://results.example.org/caramel"}

`$CARAMEL_SINKS`: sinks as `SHAPE=URL` separated by spaces (`gelf=http://graylog:12201/gelf`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from urllib.parse import urlsplit

from caramel import redact
from caramel.errors import Location, SpecError
from caramel.settings import Source, current


class SinkShape(str, Enum):
    JSON = "json"  # a JSON array of rows, POSTed as is
    ELASTICSEARCH = "elasticsearch"  # the bulk API: an index action and a document per row (NDJSON)
    GELF = "gelf"  # Graylog's GELF over HTTP: one message per row


@dataclass(frozen=True)
class Sink:
    shape: SinkShape
    url: str
    index: str = "caramel"  # Elasticsearch's index (when the URL names none)
    timeout: float = 5.0  # seconds: a sink that does not answer is queued for later, quickly


@dataclass
class Settings:
    history: str = ""
    sinks: list[Sink] = field(default_factory=list)


def settings_path() -> str:
    return current().settings_file


def load_settings() -> Settings:
    """The settings file's history and sinks (none: the defaults) with $CARAMEL_SINKS added; the
    file is read by caramel.settings, once a command."""
    settings = current()
    where = Location(settings.settings_file)
    out = Settings(
        history=settings.history if settings.origin.get("history") is not Source.DEFAULT else ""
    )
    out.sinks = [_sink(item, where) for item in settings.sink_entries]
    for word in settings.sinks.split():
        shape, _, url = word.partition("=")
        out.sinks.append(_sink({"shape": shape, "url": url}, Location("$CARAMEL_SINKS")))
    return out


def _sink(item: object, where: Location) -> Sink:
    """A sink of the settings file: `{url:, shape:, index:, timeout:}`."""
    shapes = ", ".join(s.value for s in SinkShape)
    if not isinstance(item, dict) or not item.get("url"):
        raise SpecError(
            f"a sink is a mapping with url: and shape: ({shapes}), not {redact.text(repr(item))}",
            where,
        )
    try:
        shape = SinkShape(str(item.get("shape", "json")).lower())
    except ValueError:
        raise SpecError(
            f"unknown sink shape {item.get('shape')!r}", where, hint=f"one of {shapes}"
        ) from None
    url = _sink_url(str(item["url"]), where)
    timeout = _sink_timeout(item.get("timeout", 5.0), where)
    return Sink(shape, url, str(item.get("index") or "caramel"), timeout)


def _sink_url(url: str, where: Location) -> str:
    """A sink's URL: http:// or https://, of a port that is a number where it names one."""
    if not url.startswith(("http://", "https://")):
        raise SpecError(f"a sink's URL is http:// or https://, not {redact.url(url)!r}", where)
    try:
        _ = urlsplit(url).port  # ValueError for a port that is no number
    except ValueError:  # a port that is no number (`:80x`) or out of range
        raise SpecError(
            f"a sink's URL {redact.url(url)!r} has a port that is no number from 0 to 65535",
            where,
            hint="write the port as digits (https://host:9200/...), or leave it out",
        ) from None
    return url


def _sink_timeout(value: object, where: Location) -> float:
    """A sink's timeout, in seconds: a number, or a text of one."""
    try:
        if isinstance(value, (str, bytes, int, float)):
            return float(value)
    except ValueError:
        pass
    raise SpecError(f"a sink's timeout is seconds, not {value!r}", where)
