"""Every setting caramel reads from the environment or the settings file, declared once.

Each `Setting` names its field of `Settings`, its environment variable, its default, its kind and
what it does; docs/settings.md's table is generated from `SETTINGS` (tests/test_settings.py fails
when they drift) and `bench config` shows each value and where it came from.

A value is, in this order: the environment variable, else the settings file's key of the same
name (`settings_file`: `$CARAMEL_SETTINGS`, else `settings.yaml` in the data folder), else the
default. `current()` gives them: inside a command (`command_scope`, entered by `bench` once the
arguments are read) the values read when the command started, so a command sees one set of values
from start to end; outside one (the notebook API, a job's payload, a test) the environment as it is
at the call, so a variable set after import still counts.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from enum import Enum

from caramel.errors import Location, RunError, SpecError
from caramel.redact import SECRET_NAMES


class Kind(str, Enum):
    """What a setting's text means."""

    TEXT = "text"
    PATH = "path"  # one file or folder
    PATHS = "paths"  # folders separated by `:` (os.pathsep)
    SECONDS = "seconds"  # a number of seconds, at least 0
    CHOICE = "choice"  # one of the setting's `choices`


class Source(str, Enum):
    """Where a setting's value came from (`bench config` shows it)."""

    DEFAULT = "default"
    ENVIRONMENT = "environment"
    FILE = "settings file"


@dataclass(frozen=True)
class Setting:
    name: str  # the field of Settings, and the key in the settings file
    env: str  # the environment variable
    kind: Kind
    default: str  # as text, the way the environment gives it ("" : none); data_dir's is computed
    doc: str  # one line
    in_file: bool = True  # the settings file may set it (not the two that locate that file)
    choices: tuple[str, ...] = ()  # a CHOICE's allowed values ("" among them: unset is allowed)


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "data_dir",
        "CARAMEL_DATA_DIR",
        Kind.PATH,
        "$XDG_DATA_HOME/caramel or ~/.local/share/caramel",
        "the user's data folder: recent runs, campaigns, the default history, the spool",
        in_file=False,
    ),
    Setting(
        "settings_file",
        "CARAMEL_SETTINGS",
        Kind.PATH,
        "DATA_DIR/settings.yaml",
        "the settings file (YAML: any setting below by its name, and `sinks:`)",
        in_file=False,
    ),
    Setting(
        "history",
        "CARAMEL_HISTORY",
        Kind.TEXT,
        "DATA_DIR/history.db",
        "the history: a file or a postgresql:// URL (--history wins)",
    ),
    Setting(
        "sinks",
        "CARAMEL_SINKS",
        Kind.TEXT,
        "",
        "more places history rows are sent, `SHAPE=URL` separated by spaces (added to the "
        "file's sinks:)",
    ),
    Setting(
        "site",
        "CARAMEL_SITE",
        Kind.TEXT,
        "",
        "the site name the history records (default: the cluster or host)",
    ),
    Setting(
        "benchmarks_path",
        "CARAMEL_BENCHMARKS_PATH",
        Kind.PATHS,
        "",
        "folders of benchmark files found by name, after --benchmarks and before the shipped ones",
    ),
    Setting(
        "systems_path",
        "CARAMEL_SYSTEMS_PATH",
        Kind.PATHS,
        "",
        "folders of system files, after --systems and before the shipped ones",
    ),
    Setting(
        "include_path",
        "CARAMEL_INCLUDE_PATH",
        Kind.PATHS,
        "",
        "folders searched for included files, after $JUBE_INCLUDE_PATH",
    ),
    Setting(
        "jube_include_path",
        "JUBE_INCLUDE_PATH",
        Kind.PATHS,
        "",
        "JUBE's include path, honoured as JUBE does (after --include-path)",
    ),
    Setting(
        "jube_outpath",
        "JUBE_BENCHMARK_OUTPATH",
        Kind.PATH,
        "",
        "JUBE's folder for run folders, when bench run has no -o (over the file's outpath)",
    ),
    Setting(
        "shell",
        "JUBE_EXEC_SHELL",
        Kind.PATH,
        "/bin/sh",
        "the shell do's and shell parameters run in",
    ),
    Setting(
        "templates",
        "CARAMEL_TEMPLATES",
        Kind.PATH,
        "",
        "a folder of job script templates instead of the shipped one",
    ),
    Setting(
        "kill_grace",
        "CARAMEL_KILL_GRACE",
        Kind.SECONDS,
        "5",
        "seconds between SIGTERM and SIGKILL when a do is stopped",
    ),
    Setting(
        "done_file_grace",
        "CARAMEL_DONE_FILE_GRACE",
        Kind.SECONDS,
        "5",
        "seconds a job that ended may take to show its done file before it counts as failed",
    ),
    Setting(
        "dependency_grace",
        "CARAMEL_DEPENDENCY_GRACE",
        Kind.SECONDS,
        "30",
        "seconds a job held by a failed dependency waits before it is cancelled",
    ),
    Setting(
        "pattern_timeout",
        "CARAMEL_PATTERN_TIMEOUT",
        Kind.SECONDS,
        "1",
        "seconds each pattern may match on a file (per 64 MiB of it) before it is stopped "
        "(its value is missing)",
    ),
    Setting(
        "db_timeout",
        "CARAMEL_DB_TIMEOUT",
        Kind.SECONDS,
        "10",
        "seconds a database locked by another process is waited for",
    ),
    Setting(
        "sqlite_journal",
        "CARAMEL_SQLITE_JOURNAL",
        Kind.CHOICE,
        "",
        "the SQLite journal: wal, delete, truncate or persist (default: chosen from the "
        "filesystem)",
        choices=("", "wal", "delete", "truncate", "persist"),
    ),
    Setting(
        "group_readable",
        "CARAMEL_GROUP_READABLE",
        Kind.CHOICE,
        "no",
        "yes: run states and histories caramel creates are 0640 (a shared project's group "
        "reads them), no: 0600",
        choices=("no", "yes"),
    ),
    Setting(
        "secret_env",
        "CARAMEL_SECRET_ENV",
        Kind.TEXT,
        " ".join(SECRET_NAMES),
        "name patterns (fnmatch, any case, separated by spaces) of variables an export: "
        "step's stored environment leaves out",
    ),
    Setting(
        "scheduler_log",
        "CARAMEL_SCHEDULER_LOG",
        Kind.PATH,
        "",
        "a file every scheduler call is appended to (tests count them)",
    ),
    Setting(
        "hwmon_base",
        "CARAMEL_HWMON_BASE",
        Kind.PATH,
        "",
        "a fake sysfs hwmon tree for the energy method gh (tests)",
    ),
    Setting(
        "cpu_layout",
        "CARAMEL_CPU_LAYOUT",
        Kind.TEXT,
        "",
        "PROCESSESxTHREADS for the shipped workloads instead of the one they choose",
    ),
    Setting(
        "layout_measure",
        "CARAMEL_LAYOUT_MEASURE",
        Kind.CHOICE,
        "auto",
        "auto: the first bench run of a shipped CPU trainer on a node measures its layout and "
        "keeps it (bench layout --measure); never: the rule until measured by hand",
        choices=("auto", "never"),
    ),
)
BY_NAME: Mapping[str, Setting] = {s.name: s for s in SETTINGS}


@dataclass(frozen=True)
class Settings:
    """The values of every setting, read once (see `current`); `origin` says where each came
    from."""

    data_dir: str
    settings_file: str
    history: str
    sinks: str
    site: str
    benchmarks_path: tuple[str, ...]
    systems_path: tuple[str, ...]
    include_path: tuple[str, ...]
    jube_include_path: tuple[str, ...]
    jube_outpath: str
    shell: str
    templates: str
    kill_grace: float
    done_file_grace: float
    dependency_grace: float
    pattern_timeout: float
    db_timeout: float
    sqlite_journal: str
    group_readable: str
    secret_env: str
    scheduler_log: str
    hwmon_base: str
    cpu_layout: str
    layout_measure: str
    sink_entries: tuple[
        object, ...
    ] = ()  # the settings file's `sinks:` as written (history.settings checks them)
    origin: Mapping[str, Source] = field(default_factory=dict, compare=False)

    @property
    def secret_patterns(self) -> tuple[str, ...]:
        """`secret_env` as patterns."""
        return tuple(self.secret_env.split())

    @property
    def file_mode(self) -> int:
        """The mode run states and histories are created with."""
        return 0o640 if self.group_readable == "yes" else 0o600

    def text(self, name: str) -> str:
        """A value as `bench config` and the environment write it."""
        value = getattr(self, name)
        return (
            os.pathsep.join(value)
            if isinstance(value, tuple)
            else f"{value:g}"
            if isinstance(value, float)
            else value
        )


def _default_data_dir(environ: Mapping[str, str]) -> str:
    base = environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "caramel")


def _value(setting: Setting, text: str, where: str) -> object:
    """The typed value of `text`; a bad one is an error naming the variable (or the file)."""
    parse = _PARSERS.get(setting.kind)
    return parse(setting, text, where) if parse else text


def _paths(setting: Setting, text: str, where: str) -> object:
    return tuple(p for p in text.split(os.pathsep) if p)


def _seconds(setting: Setting, text: str, where: str) -> object:
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # NaN too
        raise RunError(
            f"{where}={text!r}: expected a number of seconds (at least 0)",
            hint=f"{setting.doc}; default {setting.default}",
        )
    return seconds


def _choice(setting: Setting, text: str, where: str) -> object:
    choice = text.strip().lower()
    if choice not in setting.choices:
        allowed = ", ".join(c for c in setting.choices if c)
        raise RunError(
            f"{where}={text!r}: expected one of {allowed}"
            f"{' (or unset)' if '' in setting.choices else ''}; nothing was made",
            hint=f"{setting.doc}",
        )
    return choice


_PARSERS: dict[Kind, Callable[[Setting, str, str], object]] = {
    Kind.PATHS: _paths,
    Kind.SECONDS: _seconds,
    Kind.CHOICE: _choice,
}  # the kinds of setting that are not text


def read_file(path: str) -> dict[str, object]:
    """The settings file as a mapping ({} when there is none)."""
    if not os.path.isfile(path):
        return {}
    data = _parsed(path)
    if not isinstance(data, dict):
        raise SpecError("the settings are a mapping (history:, sinks:, ...)", Location(path))
    _check_known(data, path)
    return {str(k): v for k, v in data.items()}


def _check_known(data: dict[object, object], path: str) -> None:
    """A SpecError naming the entries of the settings file that are no setting it takes."""
    known = [s.name for s in SETTINGS if s.in_file] + ["sinks"]
    unknown = [str(k) for k in data if k not in known]
    if unknown:
        raise SpecError(
            f"unknown setting {', '.join(map(repr, unknown))}",
            Location(path),
            hint=f"the settings file takes {', '.join(known)} (docs/settings.md)",
        )


def _parsed(path: str) -> object:
    """The settings file's YAML ({} for an empty one)."""
    import yaml  # only when there is a file: most commands start without one

    try:
        with open(path) as handle:
            return yaml.safe_load(handle) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError(f"cannot read the settings: {exc}", Location(path)) from None


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """Every setting from `environ` (default: the process's environment) and the settings file."""
    env = os.environ if environ is None else environ
    data_dir = env.get("CARAMEL_DATA_DIR") or _default_data_dir(env)
    settings_file = env.get("CARAMEL_SETTINGS") or os.path.join(data_dir, "settings.yaml")
    in_file = read_file(settings_file)
    values: dict[str, object] = {"data_dir": data_dir, "settings_file": settings_file}
    origin = _folder_origins(env)
    for setting in SETTINGS[2:]:
        text, origin[setting.name], where = _given(setting, env, in_file, settings_file)
        if setting.name == "history" and origin[setting.name] is Source.DEFAULT:
            text = os.path.join(data_dir, "history.db")
        values[setting.name] = _value(setting, text, where)
    return Settings(
        **values,  # type: ignore[arg-type]
        sink_entries=_sink_entries(in_file),
        origin=origin,
    )


def _folder_origins(env: Mapping[str, str]) -> dict[str, Source]:
    """Where the data folder and the settings file were named: the environment, else defaults."""
    return {
        "data_dir": Source.ENVIRONMENT if env.get("CARAMEL_DATA_DIR") else Source.DEFAULT,
        "settings_file": Source.ENVIRONMENT if env.get("CARAMEL_SETTINGS") else Source.DEFAULT,
    }


def _sink_entries(in_file: dict[str, object]) -> tuple[object, ...]:
    """The settings file's sinks: a list of entries, or one."""
    entries = in_file.get("sinks") or []
    return tuple(entries) if isinstance(entries, list) else (entries,)


def _given(
    setting: Setting, env: Mapping[str, str], in_file: dict[str, object], settings_file: str
) -> tuple[str, Source, str]:
    """A setting's text, where it came from, and how an error names it: the environment's
    variable, else the settings file's entry, else the default."""
    if env.get(setting.env):
        return env[setting.env], Source.ENVIRONMENT, setting.env
    if setting.name != "sinks" and in_file.get(setting.name) not in (None, ""):
        return str(in_file[setting.name]), Source.FILE, f"{settings_file}: {setting.name}"
    return setting.default, Source.DEFAULT, setting.env


_pinned: list[
    Settings
] = []  # the settings of the command running in this process (a stack: commands nest in tests)


_last: list[
    tuple[tuple[object, ...], Settings]
] = []  # outside a command: the last values and what they came from


def current() -> Settings:
    """The settings of the running command, else those of the environment now (read again when a
    variable or the settings file changed)."""
    if _pinned:
        return _pinned[-1]
    key = _environment_key()
    if not _last or _last[0][0] != key:
        _last[:] = [(key, load())]
    return _last[0][1]


def _environment_key() -> tuple[object, ...]:
    """What the settings are made of, cheaply: the variables, and the settings file's time stamp."""
    env = os.environ
    values = tuple(env.get(s.env) for s in SETTINGS) + (env.get("XDG_DATA_HOME"), env.get("HOME"))
    path = env.get("CARAMEL_SETTINGS") or os.path.join(
        env.get("CARAMEL_DATA_DIR") or _default_data_dir(env), "settings.yaml"
    )
    try:
        stamp: object = os.stat(path).st_mtime_ns
    except OSError:
        stamp = None
    return values + (path, stamp)


@contextlib.contextmanager
def command_scope(settings: Settings | None = None) -> Iterator[Settings]:
    """Read the settings once for a command; `current()` gives them until it ends."""
    _pinned.append(settings or load())
    try:
        yield _pinned[-1]
    finally:
        _pinned.pop()


def names() -> list[str]:
    """The fields of Settings that are settings (not the bookkeeping)."""
    return [f.name for f in fields(Settings) if f.name in BY_NAME]


def markdown_table() -> str:
    """docs/settings.md's table of every setting (tests/test_settings.py checks the page holds
    it)."""
    lines = ["| setting | variable | kind | default | what it does |", "|---|---|---|---|---|"]
    lines += [
        f"| `{s.name}` | `{s.env}` | {s.kind.value} | {f'`{s.default}`' if s.default else '-'} | "
        f"{s.doc}{'' if s.in_file else ' (environment only)'} |"
        for s in SETTINGS
    ]
    return "\n".join(lines) + "\n"
