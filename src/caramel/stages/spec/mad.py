"""MAD's `models.json` read natively: each entry one benchmark, built like a YAML file's.

    tree = read_models_json("zoo/models.json", only=["pyt_huggingface_gpt2"])   # a <jube> tree
    entries = read_entries("zoo/models.json")    # per entry: a MadEntry, or the SpecError that
    entry gives

An entry becomes a benchmark named after it, with one step `run` whose do, run in the
workpackage's work folder, clones `url` into the folder MAD names (the URL's last part), copies
the entry's `scripts` folder into it, and runs `run.sh` (or the script `scripts` names) there with
`args`, as MAD does, under MAD's variables (`MAD_MODEL_NAME`, `MAD_RUNTIME_NGPUS`,
`MAD_SYSTEM_NGPUS`, `MAD_GPU_VENDOR`, `MAD_SYSTEM_GPU_ARCHITECTURE`, `MAD_OUTPUT_CSV`). The step
uses the system's settings (`gpus_per_node`, `accelerator`), so a run names a system tag.

Every text of an entry is data: it reaches the shell only through `shlex.quote` (with `$` doubled,
so JUBE's substitution leaves it alone), `args` is split into words by `shlex.split` and joined
back quoted, the results CSV's name passes `spec.attributes.file_name` (no separator, no `..`), and
a model's name and its clone's folder hold only letters, digits and `_ . + -` (madengine refuses
others too).

As madengine's `DiscoverModels.discover_models` (utils/discover_models.py): a folder's `models.json`
comes with each `scripts/DIR/models.json` beside it (`models_json_files`); such an entry is named
`DIR/NAME`, and its `scripts` and `dockerfile` are relative to `scripts/DIR` (the dockerfile kept as
madengine rewrites it, relative to the MAD folder). A `timeout` of 0 or less is madengine's default
(execution/container_runner_helpers.py, `resolve_run_timeout`: only a timeout above 0 is the
model's).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass

from caramel.errors import Location, SpecError, did_you_mean
from caramel.stages.spec import grammar
from caramel.stages.spec.attributes import file_name
from caramel.stages.spec.model import Benchmark, Parameterset
from caramel.stages.spec.system import SystemFacts
from caramel.stages.spec.tree import Node

FILE_NAME = "models.json"
DEFAULT_TIMEOUT = 7200  # madengine's two hours, also what a timeout of 0 or less means
# madengine's core/timeout.py `Timeout` hands the seconds to `signal.alarm`, a C int: a longer
# timeout overflows there
MAX_TIMEOUT = 2**31 - 1
SCRIPTS_FOLDER = "scripts"  # madengine reads scripts/DIR/models.json beside the top models.json
# the keys MAD's README and madengine's models know (spec/grammar.py); those caramel does not use
# are kept as data
KNOWN_KEYS = grammar.names(grammar.MAD_KEYS)
MODEL_DIR_PARAMETER = "mad_model_dir"
CONTAINER_PARAMETER = "mad_container"  # the container command line before the script; empty: bare
ENV_FILE = "mad.env"  # MAD's variables as the script got them, in the work folder
STEP = "run"
SAFE_NAME = re.compile(
    r"[\w.+-]+", re.ASCII
)  # a model's name and its clone's folder: folder and parameter names


@dataclass(frozen=True)
class MadEntry:
    """One checked entry of a models.json."""

    name: str  # DIR/NAME for an entry of scripts/DIR/models.json, as madengine names it
    index: int
    where: Location
    url: str = ""
    dockerfile: str = ""
    scripts: str = ""
    n_gpus: str = "1"  # "-1": every device of the system
    timeout: float = DEFAULT_TIMEOUT
    owner: str = ""
    training_precision: str = ""
    tags: tuple[str, ...] = ()
    multiple_results: str = ""
    args: str = ""
    data: str = ""

    @property
    def model_dir(self) -> str:
        """The folder the script runs in: the clone (named as `git clone URL` names it), MAD's
        `run_directory` without a url."""
        if not self.url:
            return "run_directory"
        last = self.url.rstrip("/").split("/")[-1].split(":")[-1]
        return last[:-4] if last.endswith(".git") else last


def is_models_json(path: str) -> bool:
    return os.path.basename(path).endswith(".json")


def models_json_files(folder: str) -> list[str]:
    """A MAD folder's models.json files as madengine discovers them: the folder's own, then each
    `scripts/DIR/models.json` (DIR in name order; madengine takes the folder listing's order). None
    without the folder's own models.json (madengine stops there)."""
    top = os.path.join(folder, FILE_NAME)
    if not os.path.isfile(top):
        return []
    scripts = os.path.join(folder, SCRIPTS_FOLDER)
    names = sorted(os.listdir(scripts)) if os.path.isdir(scripts) else []
    found = (os.path.join(scripts, name, FILE_NAME) for name in names)
    return [top] + [path for path in found if os.path.isfile(path)]


def scope_of(path: str) -> str:
    """DIR for `MAD/scripts/DIR/models.json` beside a `MAD/models.json` (madengine names its entries
    DIR/NAME), else ""."""
    folder = os.path.dirname(os.path.abspath(path))
    parent = os.path.dirname(folder)
    top = os.path.join(os.path.dirname(parent), FILE_NAME)
    if os.path.basename(parent) == SCRIPTS_FOLDER and os.path.isfile(top):
        return os.path.basename(folder)
    return ""


def read_entries(path: str) -> list[MadEntry | SpecError]:
    """Each entry of the file checked on its own: a bad entry is its error, the others stay usable.
    A file that is not a JSON list raises."""
    text = _read(path)
    items = _items(text, path)
    scope = scope_of(path)
    out: list[MadEntry | SpecError] = []
    for index, (item, start, end) in enumerate(items):
        try:
            out.append(_scoped(_entry(item, index, path, text, start, end), scope))
        except EntryError as exc:
            out.append(_scoped_error(exc, scope))
        except SpecError as exc:
            out.append(exc)
    return out


def _scoped_error(exc: EntryError, scope: str) -> EntryError:
    """An entry's error with the entry's name as madengine gives it (DIR/NAME), also one of its
    tags."""
    if scope and exc.entry_name:
        exc.entry_name = f"{scope}/{exc.entry_name}"
        exc.entry_tags = (exc.entry_name, *(exc.entry_tags or ())[1:])
    return exc


def _scoped(entry: MadEntry, scope: str) -> MadEntry:
    """An entry of scripts/DIR/models.json as madengine makes it: named DIR/NAME, its dockerfile
    relative to the MAD folder (`scripts` stays relative to the file's folder: the same path)."""
    if not scope:
        return entry
    if not SAFE_NAME.fullmatch(scope):  # a folder name in the runs' path, as the entry's name is
        raise _error(
            f"entry {entry.index} ({entry.name}): its folder {SCRIPTS_FOLDER}/{scope} "
            "holds characters other than letters, digits, _ . + -",
            entry.where,
            "madengine names the entry FOLDER/NAME: rename the folder plainly",
            entry.name,
            entry.tags,
        )
    dockerfile = entry.dockerfile and os.path.normpath(
        os.path.join(SCRIPTS_FOLDER, scope, entry.dockerfile)
    )
    return dataclasses.replace(entry, name=f"{scope}/{entry.name}", dockerfile=dockerfile)


def read_models_json(path: str, only: list[str] | None = None) -> Node:
    """The `<jube>` tree of the entries (those named in `only`, when given); a bad selected entry
    raises."""
    root = Node("jube", where=Location(path, 1))
    home = os.path.dirname(os.path.abspath(path))
    for found in read_entries(path):
        if only and _entry_name(found) not in only:
            continue
        if isinstance(found, SpecError):
            raise found
        root.children.append(benchmark_node(found, home))
    return root


def _entry_name(found: MadEntry | SpecError) -> str:
    """An entry's name, or what its error knows of it ('' where nothing)."""
    if isinstance(found, MadEntry):
        return found.name
    return found.entry_name if isinstance(found, EntryError) else ""


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(
            f"cannot read the file: {getattr(exc, 'strerror', None) or exc}", Location(path)
        ) from None


def _items(text: str, path: str) -> list[tuple[object, int, int]]:
    """The top-level list's items with their start and end offsets (for the line an entry is on)."""
    decoder = json.JSONDecoder(parse_int=_whole_number)
    try:
        whole = decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise SpecError(
            f"not valid JSON: {exc.msg}",
            Location(path, exc.lineno),
            hint='models.json is a JSON list of model entries ([{"name": ...}, ...])',
        ) from None
    if not isinstance(whole, list):
        raise SpecError(
            f"expected a JSON list of model entries, found a {type(whole).__name__}",
            Location(path, 1),
            hint='MAD\'s models.json is [{"name": ..., "scripts": ...}, ...]',
        )
    out, pos = [], text.index("[") + 1
    for _ in whole:
        pos = _skip(text, pos)
        item, end = decoder.raw_decode(text, pos)
        out.append((item, pos, end))
        pos = _skip(text, end)
        pos += text[pos] == ","
    return out


def _whole_number(digits: str) -> int | float:
    """A JSON whole number; one longer than Python turns into an int (4300 digits) is a float,
    infinite: what it means is too long for every field."""
    return int(digits) if len(digits.lstrip("-")) <= 4300 else float(digits)


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


# the entry keys whose values are texts
TEXT_KEYS = (
    "url",
    "dockerfile",
    "scripts",
    "owner",
    "training_precision",
    "multiple_results",
    "args",
    "data",
)


@dataclass(frozen=True)
class _EntryText:
    """Where one entry is written in models.json, and what its errors say of it."""

    path: str
    text: str
    start: int
    end: int
    where: Location  # the entry's first line
    label: str  # "entry 3 (NAME)"
    name: str
    known_tags: tuple[str, ...]

    def field_where(self, key: str) -> Location:
        """The line of the entry's `"key":`, else the entry's."""
        found = re.compile(r'"' + re.escape(key) + r'"\s*:').search(self.text, self.start, self.end)
        return Location(self.path, _line(self.text, found.start())) if found else self.where

    def fail(self, key: str, message: str, hint: str = "") -> SpecError:
        """The error of the entry's field `key`."""
        return _error(
            f"{self.label}: '{key}': {message}",
            self.field_where(key),
            hint,
            self.name,
            self.known_tags,
        )


def _entry(item: object, index: int, path: str, text: str, start: int, end: int) -> MadEntry:
    where = Location(path, _line(text, start))
    if not isinstance(item, dict):
        raise _error(
            f'entry {index}: expected an object {{"name": ...}}, found {type(item).__name__}',
            where,
            "",
        )
    name = _name_of(item)
    label = f"entry {index} ({name})" if name else f"entry {index}"
    fail = _EntryText(path, text, start, end, where, label, name, _known_tags(item)).fail
    _check_keys(item, fail)
    _check_name(name, label, where, fail)
    texts = _texts(item, fail)
    tags = _tags(item, fail)
    entry = MadEntry(
        name,
        index,
        where,
        n_gpus=_n_gpus(item, fail),
        timeout=_timeout(item, fail),
        tags=tags,
        **texts,
    )
    _check_paths(entry, fail)
    return entry


def _name_of(item: dict[str, object]) -> str:
    raw_name = item.get("name")
    return raw_name.strip() if isinstance(raw_name, str) else ""


def _known_tags(item: dict[str, object]) -> tuple[str, ...]:
    """The entry's tags that are texts, for an error of another field."""
    raw_tags = item.get("tags", [])
    if not isinstance(raw_tags, list):
        return ()
    return tuple(t for t in raw_tags if isinstance(t, str))


def _check_keys(item: dict[str, object], fail: Fail) -> None:
    for key in item:
        if key not in KNOWN_KEYS:
            raise fail(
                key,
                "unknown key",
                did_you_mean(key, KNOWN_KEYS) or "keys: " + ", ".join(KNOWN_KEYS),
            )


def _check_name(name: str, label: str, where: Location, fail: Fail) -> None:
    """A name is there, and holds only what a folder and parameter name may."""
    if not name:
        raise _error(
            f"{label}: no 'name'",
            where,
            'every entry needs "name": "framework_project_workload"',
            "",
        )
    if not SAFE_NAME.fullmatch(name) or name in (".", ".."):
        raise fail(
            "name",
            f"{name!r} holds characters other than letters, digits, _ . + -",
            "MAD's names are framework_project_workload, e.g. pyt_huggingface_gpt2",
        )


def _texts(item: dict[str, object], fail: Fail) -> dict[str, str]:
    """The entry's text fields, stripped; a missing or null one is empty."""
    texts = {}
    for key in TEXT_KEYS:
        value = item.get(key, "")
        value = "" if value is None else value
        if not isinstance(value, str):
            raise fail(key, f"expected a text, found {json.dumps(value)}")
        texts[key] = value.strip()
    return texts


def _tags(item: dict[str, object], fail: Fail) -> tuple[str, ...]:
    tags = item.get("tags", [])
    if not isinstance(tags, list) or not all(_is_tag(t) for t in tags):
        raise fail(
            "tags",
            f"expected a list of words, found {json.dumps(tags)}",
            'e.g. "tags": ["pyt", "fp16"]',
        )
    return tuple(t.strip() for t in tags)


def _is_tag(tag: object) -> bool:
    """A tag is a word: a non-blank text without a comma."""
    return isinstance(tag, str) and bool(tag.strip()) and "," not in tag


class EntryError(SpecError):
    """A models.json entry that cannot be read, with what is still known of it: its name (so a
    selection by name finds the entry's own error) and its tags (None: unknown), which a suite
    selecting by tag can use."""

    def __init__(
        self, message: str, where: Location, hint: str, name: str = "", tags: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message, where, hint=hint)
        self.entry_name = name
        self.entry_tags: tuple[str, ...] | None = (name, *tags) if name else None


def _error(
    message: str, where: Location, hint: str, name: str = "", tags: tuple[str, ...] = ()
) -> EntryError:
    return EntryError(message, where, hint, name, tags)


# `fail(key, message, hint)`: the error of one entry's field
Fail = Callable[..., SpecError]


def _n_gpus(item: dict[str, object], fail: Fail) -> str:
    value = item.get("n_gpus", "1")
    text = (
        str(value).strip() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    )
    if not re.fullmatch(r"-1|\d+", text):
        raise fail(
            "n_gpus",
            f"{json.dumps(value)} is not a number of GPUs",
            'expected a whole number as a string, "-1" for every GPU of the system',
        )
    return text


def _timeout(item: dict[str, object], fail: Fail) -> float:
    """Seconds; 0 or less (MAD's `-1`) is madengine's default, as `resolve_run_timeout` reads it;
    more than `MAX_TIMEOUT` is refused, as madengine's `signal.alarm` refuses it."""
    value = item.get("timeout", DEFAULT_TIMEOUT)
    if value is None:
        return float(DEFAULT_TIMEOUT)
    number = _number(value)
    if number is None or number != number:  # NaN
        raise fail(
            "timeout",
            f"{_shown(value)} is not a number of seconds",
            f"expected seconds; 0 or less (MAD's -1) is madengine's default, {DEFAULT_TIMEOUT} s",
        )
    if number > MAX_TIMEOUT:
        raise fail(
            "timeout",
            f"{_shown(value)} seconds is more than madengine takes",
            f"at most {MAX_TIMEOUT} s (madengine's signal.alarm takes a C int); "
            f"0 or less (MAD's -1) is madengine's default, {DEFAULT_TIMEOUT} s",
        )
    return float(number) if number > 0 else float(DEFAULT_TIMEOUT)


def _number(value: object) -> float | None:
    """A JSON number, or a text that reads as one; a boolean is neither. A JSON whole number stays
    an int, however long: a float of it may overflow."""
    if isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value.strip()):
        return float(value)  # a text past a double is infinite, past the longest timeout
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return None


def _shown(value: object) -> str:
    """A value as JSON, cut short: a 400-digit number is shown by its start and its length."""
    text = json.dumps(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def _check_paths(entry: MadEntry, fail: Fail) -> None:
    """`scripts` stays inside the models.json folder; the results CSV and the clone's folder are
    names."""
    _check_scripts(entry, fail)
    if entry.multiple_results:
        _check_results_name(entry, fail)
    if not SAFE_NAME.fullmatch(entry.model_dir):
        # a folder name in shell lines and parameters (madengine's rule too)
        raise fail(
            "url",
            f"the clone's folder {entry.model_dir!r} (the URL's last part) holds characters other "
            "than letters, digits, _ . + -",
            "name the repository plainly, e.g. https://host/org/model.git",
        )


def _check_scripts(entry: MadEntry, fail: Fail) -> None:
    if not entry.scripts:
        raise fail(
            "scripts",
            "missing",
            'e.g. "scripts": "scripts/my_model" (a folder with run.sh) or a script',
        )
    parts = entry.scripts.replace("\\", "/").split("/")
    if os.path.isabs(entry.scripts) or ".." in parts or "\0" in entry.scripts:
        raise fail(
            "scripts",
            f"{entry.scripts!r} leaves the folder of models.json",
            "write a path relative to models.json's folder, without ..",
        )


def _check_results_name(entry: MadEntry, fail: Fail) -> None:
    try:
        file_name(entry.multiple_results, "multiple_results", "the work folder", entry.where)
    except SpecError as exc:
        raise fail(
            "multiple_results",
            exc.message,
            "a CSV file name; MAD's scripts write ../NAME.csv "
            "from the clone, which is the work folder",
        ) from None


def script_parts(entry: MadEntry, home: str) -> tuple[str, list[str]]:
    """The folder copied into the clone and the command that runs the script (MAD's rule: a `.sh` or
    `.py` file is that script in its folder, a folder runs its run.sh)."""
    scripts = os.path.normpath(os.path.join(home, entry.scripts))
    if entry.scripts.endswith((".sh", ".slurm")):
        return os.path.dirname(scripts), ["bash", os.path.basename(scripts)]
    if entry.scripts.endswith(".py"):
        return os.path.dirname(scripts), ["python3", os.path.basename(scripts)]
    return scripts, ["bash", "run.sh"]


def _quote(text: str) -> str:
    """Shell-quoted, with `$` doubled: JUBE's substitution turns `$$` back into `$`."""
    return shlex.quote(text).replace("$", "$$")


def run_command(entry: MadEntry, home: str) -> str:
    """The do: clone, copy the scripts in, run the script with MAD's variables. Entry text is
    quoted."""
    folder, script = script_parts(entry, home)
    url = _clone_url(entry, home)
    model_dir = _quote(entry.model_dir)
    lines = ["set -e", f"rm -rf {model_dir}"]
    if url:
        lines.append(f"git -c protocol.ext.allow=never clone --quiet -- {_quote(url)} {model_dir}")
    else:
        lines.append(f"mkdir -p {model_dir}")
    lines.append(f"cp -R {_quote(folder)}/. {model_dir}/")
    env = _mad_variables(entry)
    lines.append("export " + " ".join(f"{k}={v}" for k, v in env.items()))
    lines.append(
        'if [ -z "$${MAD_SYSTEM_GPU_ARCHITECTURE:-}" ]; then MAD_SYSTEM_GPU_ARCHITECTURE=$$( '
        "(rocminfo 2>/dev/null | grep -o -m1 'gfx[0-9a-f]*') || "
        "(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1) || true); fi"
    )
    lines.append("export MAD_SYSTEM_GPU_ARCHITECTURE")
    lines.append(f"env | grep '^MAD_' > {ENV_FILE}")  # what the script was given: perf.csv reads it
    words = [_quote(w) for w in script + shlex.split(entry.args)]
    lines.append(f"cd {model_dir} && ${CONTAINER_PARAMETER} {' '.join(words)}")
    return "\n".join(lines)


def _clone_url(entry: MadEntry, home: str) -> str:
    """The entry's URL; a local path relative to models.json made absolute."""
    url = entry.url
    if (
        url
        and not re.match(r"^[a-z][a-z0-9+.-]*://", url)
        and not url.startswith("/")
        and ":" not in url
    ):
        return os.path.normpath(os.path.join(home, url))
    return url


def _mad_variables(entry: MadEntry) -> dict[str, str]:
    """MAD's variables as the script's shell line sets them (values quoted or JUBE parameters)."""
    env = {
        "MAD_MODEL_NAME": _quote(entry.name),
        "MAD_SYSTEM_NGPUS": "$system_gpus_per_node",
        "MAD_RUNTIME_NGPUS": "$system_gpus_per_node" if entry.n_gpus == "-1" else entry.n_gpus,
        "MAD_GPU_VENDOR": "$$(echo $system_accelerator | tr a-z A-Z)",
    }
    if entry.multiple_results:
        env["MAD_OUTPUT_CSV"] = _quote(entry.multiple_results)
    return env


def benchmark_node(entry: MadEntry, home: str) -> Node:
    """The entry as the `<benchmark>` element a YAML file would give."""
    where = entry.where

    def leaf(tag: str, text: str = "", **attrs: str) -> Node:
        return Node(tag, dict(attrs), text, [], where)

    meta = leaf("meta")
    meta_values = {
        "description": f"MAD model {entry.name} ({FILE_NAME} entry {entry.index})",
        "tags": ",".join(entry.tags),
        "owner": entry.owner,
        "precision": entry.training_precision,
        "url": entry.url,
        "multiple_results": entry.multiple_results,
        "time_limit": f"{entry.timeout:g}",
    }
    if entry.n_gpus not in ("-1", "0"):
        meta_values["devices"] = entry.n_gpus
    meta.children = [leaf(k, v) for k, v in meta_values.items() if v]
    params = leaf("parameterset", name="mad")
    params.children = [
        leaf("parameter", entry.model_dir, name=MODEL_DIR_PARAMETER, separator="\x1f"),
        leaf("parameter", entry.n_gpus, name="mad_n_gpus", separator="\x1f"),
        leaf(
            "parameter",
            entry.dockerfile.replace("$", "$$"),
            name="mad_dockerfile",
            separator="\x1f",
        ),
        leaf("parameter", entry.args.replace("$", "$$"), name="mad_args", separator="\x1f"),
        leaf("parameter", entry.data.replace("$", "$$"), name="mad_data", separator="\x1f"),
        leaf("parameter", "", name=CONTAINER_PARAMETER, separator="\x1f"),
        leaf("parameter", "", name="container_image", separator="\x1f"),
    ]  # the run's provenance
    step = leaf("step", name=STEP)
    step.children = [
        leaf("use", "mad"),
        leaf("use", "system"),
        leaf("do", run_command(entry, home)),
    ]
    # one folder, never DIR/: `bench run` by name keeps only the outpath's last part, and MAD's
    # pytorch_train/pyt_train_flux would then share pyt_train_flux's runs
    node = leaf("benchmark", name=entry.name, outpath=entry.name.replace("/", "__") + "_runs")
    node.children = [leaf("comment", meta_values["description"]), meta, params, step]
    return node


def in_container(bench: Benchmark, system: SystemFacts | None) -> Benchmark:
    """A models.json benchmark on a system whose `container_runtime` and `images` name an image for
    the entry's dockerfile (the stack is the dockerfile's file name: `docker/pyt_huggingface` is
    `pyt_huggingface`) runs its script in that image, through `caramel.payloads.container`, with the
    workpackage's folder bound. Any other benchmark, or no such image, is returned as it is: bare.
    The system is read through its protocol (this stage imports no systems code)."""
    pset = bench.parametersets.get("mad")
    if pset is None or system is None or not system.container_runtime:
        return bench
    dockerfile = _parameter_value(pset, "mad_dockerfile").replace("$$", "$")
    path = _image_path(system, dockerfile)
    if path is None:
        return bench
    values = {
        CONTAINER_PARAMETER: _container_line(system, path),
        "container_image": path.replace("$", "$$"),
    }
    bench = copy.copy(bench)
    bench.parametersets = dict(bench.parametersets, mad=_with_values(pset, values))
    return bench


def _with_values(pset: Parameterset, values: dict[str, str]) -> Parameterset:
    """The parameterset with the parameters `values` names given those values."""
    params = [
        dataclasses.replace(p, value=values[p.name]) if p.name in values else p
        for p in pset.parameters
    ]
    return dataclasses.replace(pset, parameters=params)


def _parameter_value(pset: Parameterset, name: str) -> str:
    return next((p.value for p in pset.parameters if p.name == name), "")


def _image_path(system: SystemFacts, dockerfile: str) -> str | None:
    """The absolute path of the system's image for the dockerfile's stack; None: no such image."""
    image = system.images.get(os.path.basename(dockerfile.rstrip("/")))
    if not image:
        return None
    image = os.path.expandvars(os.path.expanduser(image))
    folder = os.path.expandvars(os.path.expanduser(system.image_dir))
    return os.path.abspath(
        image if os.path.isabs(image) or not folder else os.path.join(folder, image)
    )


def _container_line(system: SystemFacts, path: str) -> str:
    """The command line that runs the script in the image at `path` (before the script's words)."""
    runtime_name = system.container_runtime
    words = [
        sys.executable,
        "-m",
        "caramel.payloads.container",
        "--runtime",
        runtime_name,
        "--image",
        path,
    ]
    accelerator = system.accelerator
    if runtime_name == "apptainer" and accelerator in ("nvidia", "amd"):
        words += ["--gpu-flag", "--nv" if accelerator == "nvidia" else "--rocm"]
    return " ".join(_quote(w) for w in words) + " --bind $jube_wp_abspath --"
