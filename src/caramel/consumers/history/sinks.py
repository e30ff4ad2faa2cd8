"""Result rows sent where the site looks, as they are recorded: an HTTP endpoint taking JSON, with
Elasticsearch's bulk API and Graylog's GELF over HTTP as two shapes of it (history.settings).

Every row goes through a queue on disk (`sink-queue.db` in the user's data folder) and leaves it
only once its sink has taken it, so a sink that is down never fails a run: its rows wait, with a
warning, for the next `bench result` or `bench history push`. A sender holds the queue's write lock
while it sends, so two commands flushing at once send each row once. urllib (the standard library)
is enough for a POST with a short timeout.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
import sys
import time
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from caramel import redact
from caramel.consumers.history.layout import MetricRow
from caramel.consumers.history.rows import failed_row
from caramel.consumers.history.settings import Sink, SinkShape
from caramel.consumers.history.store import RunRecord
from caramel.stages.state import sqlitefiles

BATCH = 500  # rows per request (Elasticsearch and JSON); GELF takes one message per request
# a figure as a sink takes it: a JSON object (history, provenance and site fields)
Document = dict[str, Any]
QUEUE_SCHEMA = "CREATE TABLE IF NOT EXISTS queue (id INTEGER PRIMARY KEY, sink TEXT, body TEXT)"


def queue_path() -> str:
    from caramel.stages.state.registry import data_dir

    return os.path.join(data_dir(), "sink-queue.db")


def documents(written: Iterable[tuple[RunRecord, list[MetricRow]]]) -> list[Document]:
    """One document per figure row (history.store's metric rows), with the history's fields."""
    out = []
    for run, rows in written:
        provenance = {
            k: getattr(run, k)
            for k in (
                "run_key",
                "benchmark",
                "file",
                "run_dir",
                "tags",
                "caramel_version",
                "git_commit",
                "host",
                "nodes",
                "job_ids",
                "container",
                "energy_method",
                "started",
                "ended",
            )
        }
        for row in rows:
            run_key, tbl, config, name, unit, direction, n, mean, sd, low, high, samples = row[:12]
            if failed_row(row) or samples is None:  # a failed row's reason: no figure to send
                continue
            out.append(
                {
                    "id": hashlib.sha1(
                        "\0".join((run_key, tbl, config, name, samples)).encode()
                    ).hexdigest()[:24],
                    "benchmark": run.benchmark,
                    "table": tbl,
                    "figure": name,
                    "value": mean,
                    "unit": unit,
                    "direction": direction,
                    "n": n,
                    "sd": sd,
                    "min": low,
                    "max": high,
                    "samples": json.loads(samples),
                    "configuration": json.loads(config),
                    "system": run.system,
                    "site": run.site,
                    "fingerprint": run.fingerprint,
                    "provenance": provenance,
                    "timestamp": run.started if run.started is not None else time.time(),
                }
            )
    return out


def request_url(url: str) -> str:
    """The URL a request goes to: without user and password (they travel in the Authorization
    header; what is printed is caramel.redact.url's)."""
    parts = urlsplit(url)
    return (
        urlunsplit(
            (
                parts.scheme,
                (parts.hostname or "") + (f":{parts.port}" if parts.port else ""),
                parts.path,
                parts.query,
                "",
            )
        )
        if parts.username
        else url
    )


def _bodies(sink: Sink, docs: list[Document]) -> list[tuple[bytes, str]]:
    """The requests that carry `docs` to `sink`: (body, content type)."""
    if sink.shape is SinkShape.JSON:
        return [(json.dumps(docs).encode(), "application/json")]
    if sink.shape is SinkShape.ELASTICSEARCH:
        lines = []
        for doc in docs:
            stamp = datetime.fromtimestamp(doc["timestamp"], timezone.utc).isoformat()
            lines += [
                json.dumps({"index": {"_index": sink.index, "_id": doc["id"]}}),
                json.dumps({**doc, "@timestamp": stamp}),
            ]
        return [("\n".join(lines).encode() + b"\n", "application/x-ndjson")]
    return [(json.dumps(_gelf(doc)).encode(), "application/json") for doc in docs]


def _gelf(doc: Document) -> Document:
    """A GELF 1.1 message: additional fields are `_name`, strings or numbers (nested ones as
    JSON)."""
    message = {
        "version": "1.1",
        "host": doc["provenance"]["host"] or doc["site"] or "caramel",
        "short_message": (
            f"{doc['benchmark']} {doc['figure']} = {doc['value']:g} {doc['unit'] or ''}"
        ).strip(),
        "timestamp": doc["timestamp"],
        "level": 6,
    }
    for key, value in doc.items():
        if key != "timestamp":
            name = "_row_id" if key == "id" else f"_{key}"  # GELF reserves _id
            message[name] = _gelf_value(value)
    return message


def _gelf_value(value: object) -> object:
    """A GELF additional field's value: a string or a number as it is, anything else as JSON."""
    return value if isinstance(value, (int, float, str)) else json.dumps(value)


def _post(sink: Sink, body: bytes, kind: str) -> None:
    """POST one body; any answer but 2xx (or an Elasticsearch bulk answer with errors) raises
    OSError."""
    # urllib.request (http.client, ssl, email): 20 ms of CPU, imported only where a sink is set,
    # not by every `bench result` that records to the history
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        request_url(sink.url), data=body, headers=_headers(sink.url, kind), method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=sink.timeout) as answer:
            text = answer.read()
    except urllib.error.HTTPError as exc:
        raise OSError(f"it answered HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        raise OSError(f"no answer: {getattr(exc, 'reason', exc)}") from None
    if sink.shape is SinkShape.ELASTICSEARCH:
        _check_bulk_answer(text)


def _headers(url: str, kind: str) -> dict[str, str]:
    """A request's headers: its content type, and the URL's user and password as Basic
    authorization."""
    parts = urlsplit(url)
    headers = {"Content-Type": kind}
    if parts.username:
        token = base64.b64encode(f"{parts.username}:{parts.password or ''}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    return headers


def _check_bulk_answer(text: bytes) -> None:
    """Elasticsearch answers a bulk request 200 even where items failed: OSError then."""
    try:
        if json.loads(text or b"{}").get("errors"):
            raise OSError("the bulk answer reports errors")
    except ValueError:
        raise OSError("the bulk answer is not JSON") from None


def _queue() -> sqlite3.Connection:
    path = queue_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    queue = sqlitefiles.FileKind("sink queue", timeout_s=60, autocommit=True)
    db = sqlitefiles.open_connection(path, queue)
    db.execute(QUEUE_SCHEMA)
    return db


def _key(sink: Sink) -> str:
    return f"{sink.shape.value} {sink.url}"


def enqueue(sinks: list[Sink], docs: list[Document]) -> None:
    if not sinks or not docs:
        return
    db = _queue()
    try:
        with db:
            db.execute("BEGIN IMMEDIATE")
            for sink in sinks:
                db.executemany(
                    "INSERT INTO queue (sink, body) VALUES (?, ?)",
                    ((_key(sink), json.dumps(doc)) for doc in docs),
                )
    finally:
        db.close()


def flush(sinks: list[Sink]) -> int:
    """Send what is queued for `sinks`; returns the rows sent. A sink that fails keeps its rows
    (a warning says so) and the others go on."""
    if not sinks or not os.path.isfile(queue_path()):
        return 0
    db = _queue()
    try:
        return sum(_flush_one(db, sink) for sink in sinks)
    finally:
        db.close()


def _flush_one(db: sqlite3.Connection, sink: Sink) -> int:
    """One batch at a time under the queue's write lock, removed in the same transaction once sent:
    a second sender waits, then finds only what is still unsent."""
    sent = 0
    while True:
        db.execute("BEGIN IMMEDIATE")
        try:
            batch = db.execute(
                "SELECT id, body FROM queue WHERE sink = ? ORDER BY id LIMIT ?", (_key(sink), BATCH)
            ).fetchall()
            if not batch:
                return sent
            done = _send(sink, [json.loads(body) for _, body in batch])
            db.executemany("DELETE FROM queue WHERE id = ?", ((i,) for i, _ in batch[:done]))
            sent += done
            if done < len(batch):
                return sent
        finally:
            db.execute("COMMIT")


def _send(sink: Sink, docs: list[Document]) -> int:
    """How many of `docs` (from the first) `sink` took; a failure is a warning."""
    bodies = _bodies(sink, docs)
    done = 0
    try:
        for body, kind in bodies:
            _post(sink, body, kind)
            done += len(docs) // len(bodies)  # GELF: one document a body; the others: all in one
    except OSError as exc:
        print(
            f"warning: the {sink.shape.value} sink {redact.url(sink.url)} did not take the "
            f"results ({exc}); "
            f"they wait in {queue_path()} and are sent by the next bench result "
            "or bench history push",
            file=sys.stderr,
        )
    return done
