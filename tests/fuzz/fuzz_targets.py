"""What the fuzzing layer feeds, and to what: one `Target` per reader of outside input.

Each target is a Hypothesis strategy (generated inputs and the shipped files mutated) and a function
that hands one input to caramel's real reader. The contract (issue 22): the reader answers with a
result or a caramel error (`CaramelError`: SpecError, RunError, ...); any other exception is a
finding, an internal error. tests/fuzz/test_fuzz_inputs.py runs every target briefly in the suite;
perf/fuzz_long.py runs the same targets long and counts examples and findings.

The engine's marker parser is reached through `parse_markers` only, so that it can be pointed at
another parser (a pure `parse_marker`) in one place.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from caramel.errors import CaramelError
from caramel.resources import shipped

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = sorted(p for p in shipped("benchmarks").iterdir() if p.suffix in (".xml", ".yaml"))
SYSTEMS = sorted((ROOT / "systems").glob("*.yaml")) or sorted(shipped("systems").glob("*.yaml"))

# Pieces a mutation inserts: the syntax of each format, and bytes readers trip on
TOKENS = [b"<", b">", b"</", b"/>", b"<step>", b"</step>", b"<do>", b"<!DOCTYPE x [<!ENTITY e \"&e;&e;\">]>",
          b"&", b"&amp;", b"&lt;", b"&#0;", b"&#x110000;", b"<![CDATA[", b"]]>", b"<!--", b"-->", b"\"", b"'",
          b"=", b"$", b"${", b"$$", b"{", b"}", b"[", b"]", b":", b": ", b"- ", b"-", b"!include ", b"!!python/name:os.system",
          b"*a", b"&a ", b"<<: *a", b"\n", b"\r\n", b"\t", b"  ", b"\x00", b"\xff", b"\xc3", "\u2028".encode(),
          "\U0001f600".encode(), b"%", b"#", b"null", b"~", b"true", b"1e999", b"-0", b"0x10", b"9" * 30,
          b"..", b"/", b"../../", b"name", b"tag", b"use", b"from", b"init_with", b"active", b"mode=\"python\"",
          b"type=\"int\"", b"separator", b"unit", b"direction", b"copies", b"timeout", b"shared", b"outpath",
          b"@caramel ", b"@caramel B ", b"@caramel E ", b"@caramel EXIT ", b"@caramel ENV\n", b"@caramel ENDENV\n"]


@st.composite
def mutated(draw, sources: list[bytes]) -> bytes:
    """One of `sources` with 1 to 6 mutations: a span deleted, duplicated or replaced, a token or random bytes
    inserted, a byte flipped."""
    data = bytearray(draw(st.sampled_from(sources)))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data)))
        span = draw(st.integers(0, 64))
        action = draw(st.sampled_from(("delete", "token", "bytes", "duplicate", "flip", "replace")))
        if action == "delete":
            del data[at:at + span]
        elif action == "token":
            data[at:at] = draw(st.sampled_from(TOKENS))
        elif action == "bytes":
            data[at:at] = draw(st.binary(max_size=16))
        elif action == "duplicate":
            data[at:at] = data[at:at + span] * draw(st.integers(1, 4))
        elif action == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "replace":
            data[at:at + span] = draw(st.sampled_from(TOKENS))
    return bytes(data)


XML_TAGS = ["jube", "benchmark", "parameterset", "parameter", "step", "do", "use", "fileset", "copy", "link",
            "prepare", "substituteset", "iofile", "sub", "patternset", "pattern", "analyser", "analyse", "file",
            "result", "table", "column", "include", "include-path", "path", "selection", "only", "not", "tag",
            "database", "key", "comment", "check_tags", "exclude", "sanity"]
XML_ATTRS = ["name", "outpath", "type", "mode", "separator", "use", "from", "init_with", "tag", "active", "step",
             "depend", "iterations", "shared", "work_dir", "suffix", "source", "dest", "file", "reduce", "unit",
             "direction", "format", "title", "style", "sort", "filter", "timeout", "copies", "done_file",
             "break_file", "error_file", "export", "max_async", "procs_per_node", "cycles", "update_mode"]
WORDS = st.sampled_from(["a", "b", "n", "1,2", "int", "float", "python", "shell", "text", "true", "false", "$a",
                         "${a}", "$$", "x/../../y", "", " ", "1e3", "-1", "0", "all", "csv", "higher", "sum",
                         "echo $a", "t=$jube_pat_fp", "a.b", "*", "/tmp"]) | st.text(max_size=12)


def _xml_element(children) -> st.SearchStrategy[str]:
    def build(tag, attrs, body):
        attr = "".join(f' {k}="{_xml_escape(v)}"' for k, v in attrs.items())
        return f"<{tag}{attr}>{body}</{tag}>"
    return st.builds(build, st.sampled_from(XML_TAGS), st.dictionaries(st.sampled_from(XML_ATTRS), WORDS, max_size=4),
                     st.one_of(WORDS.map(_xml_escape), st.lists(children, max_size=4).map("".join)))


def _xml_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def generated_xml() -> st.SearchStrategy[bytes]:
    body = st.recursive(WORDS.map(_xml_escape), _xml_element, max_leaves=25)
    return body.map(lambda inner: f"<jube>{inner}</jube>".encode("utf-8", "surrogatepass"))


YAML_KEYS = st.sampled_from(["name", "outpath", "parameterset", "parameter", "step", "do", "use", "fileset",
                             "patternset", "pattern", "analyser", "analyse", "result", "table", "column", "_",
                             "type", "mode", "tag", "include", "active", "shared", "copies", "timeout", "file",
                             "scheduler", "launcher", "devices", "nodes", "cores_per_node", "energy", "modules"])
YAML_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | WORDS,
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(YAML_KEYS, inner, max_size=5),
                           max_leaves=25)


def generated_yaml() -> st.SearchStrategy[bytes]:
    import yaml

    def dump(doc) -> bytes:
        try:
            return yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass")
        except (yaml.YAMLError, ValueError):
            return b"{}"
    return st.dictionaries(YAML_KEYS, YAML_VALUES, max_size=6).map(dump)


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                     max_size=4), max_leaves=20)


@dataclass
class Target:
    name: str
    strategy: st.SearchStrategy
    run: Callable[[object], None]


def is_finding(exc: BaseException) -> bool:
    """An internal error: anything but a caramel error (KeyboardInterrupt and SystemExit pass through)."""
    return isinstance(exc, Exception) and not isinstance(exc, CaramelError)


def make_targets(workdir: Path) -> dict[str, Target]:
    """Every target, with its scratch files under `workdir` (made once: the examples reuse them)."""
    workdir.mkdir(parents=True, exist_ok=True)
    return {t.name: t for t in (_loader_target(workdir, ".xml"), _loader_target(workdir, ".yaml"),
                                _system_target(workdir), _run_record_target(workdir), _history_target(workdir),
                                _export_target(workdir), _marker_target())}


def _loader_target(workdir: Path, suffix: str) -> Target:
    from caramel.stages.spec.loader import load

    folder = workdir / f"bench{suffix.replace('.', '_')}"
    shutil.copytree(shipped("benchmarks"), folder, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("*_run", "__pycache__"))
    sources = [p.read_bytes() for p in BENCHMARKS if p.suffix == suffix]
    path = folder / f"fuzzed{suffix}"

    def run(data: bytes) -> None:
        path.write_bytes(data)
        load(str(path))
    generated = generated_xml() if suffix == ".xml" else generated_yaml()
    return Target(f"{suffix[1:]}_loader", mutated(sources) | generated, run)


def _system_target(workdir: Path) -> Target:
    from caramel.adapters.systems.loader import load_system

    sources = [p.read_bytes() for p in SYSTEMS]
    path = workdir / "system.yaml"

    def run(data: bytes) -> None:
        path.write_bytes(data)
        load_system(path)
    return Target("system_loader", mutated(sources) | generated_yaml(), run)


def _run_record_target(workdir: Path) -> Target:
    """A real run record (a shipped benchmark's model and plan); one of its JSON columns replaced by a
    mutated or generated value, then read as every command reads it."""
    from caramel.stages.expand.params import Params
    from caramel.stages.spec.loader import load_one
    from caramel.stages.state.codec import encode_model
    from caramel.stages.state.rows import RunInfo
    from caramel.stages.state.store import Store

    run_dir = workdir / "run"
    run_dir.mkdir(exist_ok=True)
    model = load_one(str(shipped("benchmarks") / "quickstart.yaml"))
    params = Params({"n": "1", "text": "a b"}, {"n": "int"})
    store = Store.create(str(run_dir), RunInfo(1, model.name, "f.yaml", str(workdir), str(run_dir), ["x"]), model,
                         [(0, "s", 0, (), "000000_s", params)])
    store.close()
    columns = {"model": encode_model(model).encode(), "tags": b'["a","b"]', "settings": b'{"quiet": true}',
               "params": json.dumps(params).encode(), "types": b'{"n": "int"}', "cycles": b'[{"n": "2"}]',
               "env": b'{"PATH": "/bin"}', "wait_files": b'["done"]'}
    sql = {name: f"UPDATE {'runs' if name in ('model', 'tags', 'settings') else 'workpackages'} SET {name}=?"
           for name in columns}
    db_file = str(run_dir / "caramel.db")
    pristine = (run_dir / "caramel.db").read_bytes()

    def run(case: tuple[str, bytes]) -> None:
        column, data = case
        (run_dir / "caramel.db").write_bytes(pristine)
        with closing(sqlite3.connect(db_file)) as db, db:
            db.execute(sql[column], (data.decode("utf-8", "replace"),))
        store = Store(db_file, readonly=True)
        try:
            store.info()
            store.model()
            store.all_params()
            store.params(0)
            store.workpackages()
            store.env(0)
        finally:
            store.close()
    values = st.sampled_from(sorted(columns)).flatmap(
        lambda c: st.tuples(st.just(c), mutated([columns[c]]) | JSON_VALUES.map(lambda v: json.dumps(v).encode())))
    return Target("run_record", values, run)


def _history_target(workdir: Path) -> Target:
    """A history with one run; one field of its rows replaced by a mutated or generated value (any SQLite
    type), then read as `bench history`, `export` and the pages read it."""
    from caramel.consumers.history.metrics import Metric
    from caramel.consumers.history.reader import read_history
    from caramel.consumers.history.store import History, RunRecord

    path = workdir / "history.db"
    with History(str(path)) as history:
        history.add(RunRecord("k", "b", tags=["t"], job_ids=["1"], started=1.0, fingerprint={"gpu": "x"}),
                    [Metric("t", {"n": 1}, "rate", "GF/s", "higher", [1.0, 2.0])])
    pristine = path.read_bytes()
    fields = {"runs.tags": b'["t"]', "runs.job_ids": b'["1"]', "runs.fingerprint": b'{"gpu": "x"}',
              "runs.started": b"1.0", "runs.benchmark": b"b", "series.config": b'{"n": 1}',
              "figures.samples": b"[1.0,2.0]", "series.direction": b"higher", "figures.mean": b"1.5"}
    any_value = st.one_of(mutated(list(fields.values())).map(lambda b: b.decode("utf-8", "replace")),
                          JSON_VALUES.map(json.dumps), st.integers(-2**63, 2**63 - 1), st.floats(), st.none(),
                          st.binary(max_size=16))

    def run(case: tuple[str, object]) -> None:
        field, value = case
        table, column = field.split(".")
        path.write_bytes(pristine)
        try:
            with closing(sqlite3.connect(path)) as db, db:
                db.execute(f"UPDATE {table} SET {column}=?", (value,))
        except sqlite3.IntegrityError:  # a NULL where the layout says NOT NULL: never stored
            return
        with History(str(path)) as history:
            for run in history.runs():
                history.metrics(run.run_key)
            list(history.export())
        read_history(str(path))
    return Target("history_rows", st.tuples(st.sampled_from(sorted(fields)), any_value), run)


def _export_target(workdir: Path) -> Target:
    """Lines of an export (a real one mutated, or generated JSON) through the importer's checks, then into
    a history."""
    from caramel.consumers.history.store import EXPORT_SCHEMA, History
    from caramel.consumers.history.validate import parse_line
    from caramel.errors import Location

    good = json.dumps({"schema": EXPORT_SCHEMA, "run": {"run_key": "k", "benchmark": "b", "tags": ["t"],
                                                         "started": 1.5},
                       "metrics": [{"table": "t", "row": {"n": 1}, "name": "rate", "unit": "GF/s",
                                    "direction": "higher", "samples": [1.0, 2.0]}],
                       "site": "s", "fingerprint": {"gpu": "x"}}).encode()
    path = workdir / "imported.db"
    pristine: list[bytes] = []

    def run(lines: list[bytes]) -> None:
        if not pristine:
            History(str(path)).db.close()
            pristine.append(path.read_bytes())
        path.write_bytes(pristine[0])
        records = []
        for number, raw in enumerate(lines, 1):
            parsed = parse_line(raw, Location("x.jsonl", number))
            if parsed is not None:
                records.append((*parsed, Location("x.jsonl", number)))
        with History(str(path)) as history:
            history.import_records(records)
    line = mutated([good]) | JSON_VALUES.map(lambda v: json.dumps(v).encode()) | st.just(good)
    return Target("export_import", st.lists(line, min_size=1, max_size=3), run)


def parse_markers(data: bytes) -> object:
    """The engine's reading of its channel (engine.marker.parse_marker), line by line, each line as it
    came and with this run's secret put in: every line is a marker or a ChannelError (a RunError),
    never another exception."""
    from caramel.stages.engine.marker import ChannelError, parse_marker

    read = []
    for raw in data.split(b"\n"):
        text = raw.decode("utf-8", errors="replace")
        for line in (text, text.replace("@caramel ", "@caramel s3cret ", 1)):
            try:
                read.append(parse_marker(line, "s3cret"))
            except ChannelError as exc:
                read.append(exc)
    return read


MARKER_LINES = st.sampled_from([b"@caramel B 0", b"@caramel E 0 0", b"@caramel E 0 1", b"@caramel B 1",
                                b"@caramel W 1", b"@caramel K 0", b"@caramel X 0", b"@caramel END",
                                b"@caramel EXIT 0", b"@caramel ENV", b"export A='x'", b"@caramel ENDENV",
                                b"@caramel", b"@caramel B", b"@caramel B x", b"@caramel E 0", b"@caramel EXIT",
                                b"@caramel EXIT 99999999999999999999", b"@caramel B -1", b"@caramel Q 1",
                                b"hello", b""]) | st.binary(max_size=24)


def _marker_target() -> Target:
    return Target("markers", st.lists(MARKER_LINES, max_size=12).map(b"\n".join) | st.binary(max_size=200),
                  lambda data: parse_markers(data))


def scratch(name: str) -> Path:
    """A scratch folder of the long harness (the suite uses pytest's tmp_path)."""
    path = Path(os.environ.get("TMPDIR", "/tmp")) / name
    shutil.rmtree(path, ignore_errors=True)
    return path
