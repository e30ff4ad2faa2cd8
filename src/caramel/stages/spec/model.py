"""The typed model of a benchmark: what every later stage works from.

It does not know XML or YAML. Elements whose `tag` does not hold for the chosen tags are already
gone; every node keeps `where` (file and line) for the errors of later stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from caramel.errors import Location
from caramel.stages.spec.system import SystemFacts
from caramel.vocabulary import Word

NOWHERE = Location("<builtin>")


class ParameterMode(Word):
    """How a parameter's value is made (`mode=`): as written, or by a script of that language."""

    TEXT = "text"
    PYTHON = "python"
    SHELL = "shell"
    ENV = "env"
    TAG = "tag"
    PERL = "perl"


class UpdateMode(Word):
    """When a parameter is evaluated again (JUBE's `update_mode=`)."""

    NEVER = "never"
    USE = "use"
    STEP = "step"
    CYCLE = "cycle"
    ALWAYS = "always"


class FileAction(Word):
    """What a fileset entry does: the element it was read from."""

    COPY = "copy"
    LINK = "link"
    PREPARE = "prepare"


class TableOutput(Word):
    """Where a result table goes: the element it was read from."""

    TABLE = "table"
    DATABASE = "database"
    SYSLOG = "syslog"


PARAMETER_MODES = tuple(mode.value for mode in ParameterMode)
SCRIPT_MODES = ("python", "shell", "perl", "env", "tag")
UPDATE_MODES = tuple(mode.value for mode in UpdateMode)
PARAMETER_TYPES = ("int", "float", "string", "str")


class DuplicateMode(Word):
    """What a parameter defined again in the same set does (JUBE's `duplicate=`)."""

    NONE = "none"
    REPLACE = "replace"
    CONCAT = "concat"
    ERROR = "error"


DUPLICATE_MODES = tuple(mode.value for mode in DuplicateMode)


@dataclass
class Parameter:
    name: str
    value: str
    separator: str = ","
    type: str = "string"
    mode: ParameterMode = ParameterMode.TEXT
    unit: str = ""
    export: bool = False
    update_mode: UpdateMode = UpdateMode.NEVER
    duplicate: DuplicateMode = DuplicateMode.NONE
    where: Location = NOWHERE

    @property
    def is_script(self) -> bool:
        return self.mode in SCRIPT_MODES


@dataclass
class Zip:
    """caramel addition: parameters whose values vary together (the i-th values go together)."""

    names: list[str]
    where: Location = NOWHERE


@dataclass
class Exclude:
    """caramel addition: drop a combination when this Python condition holds after substitution."""

    condition: str
    where: Location = NOWHERE


@dataclass
class Parameterset:
    name: str
    parameters: list[Parameter] = field(default_factory=list)
    duplicate: DuplicateMode = DuplicateMode.REPLACE  # a set's: never NONE
    zips: list[Zip] = field(default_factory=list)
    excludes: list[Exclude] = field(default_factory=list)
    where: Location = NOWHERE


@dataclass
class IOFile:
    source: str
    dest: str
    out_mode: str = "w"
    where: Location = NOWHERE


@dataclass
class Sub:
    source: str
    dest: str
    mode: str = "text"
    where: Location = NOWHERE


@dataclass
class Substituteset:
    name: str
    iofiles: list[IOFile] = field(default_factory=list)
    subs: list[Sub] = field(default_factory=list)
    where: Location = NOWHERE


@dataclass
class FileEntry:
    """A `copy` or `link` entry (path relative to `base_dir`) or a `prepare` command."""

    action: FileAction
    path: str
    name: str = ""
    rel_path_ref: str = "external"
    base_dir: str = "."
    separator: str = ","
    source_dir: str = ""
    target_dir: str = ""
    active: str = "true"
    # prepare only
    stdout: str = ""
    stderr: str = ""
    work_dir: str = ""
    where: Location = NOWHERE


@dataclass
class Fileset:
    name: str
    entries: list[FileEntry] = field(default_factory=list)
    where: Location = NOWHERE


@dataclass
class Do:
    command: str
    done_file: str = ""
    error_file: str = ""
    break_file: str = ""
    stdout: str = ""
    stderr: str = ""
    shared: bool = False
    active: str = "true"
    work_dir: str = ""
    where: Location = NOWHERE


class SanityKind(Word):
    """What a <sanity> checks: a regex that must match (EXPECT) or must not (REJECT), or an
    expression."""

    EXPECT = "expect"
    REJECT = "reject"
    EXPR = "expr"


SANITY_KINDS = tuple(kind.value for kind in SanityKind)


@dataclass
class Sanity:
    """caramel addition: a check a workpackage must pass for its row to count (spec/sanity.py).

    `expect`: the regex must match somewhere in `file`; `reject`: it must match nowhere; `expr`: the
    expression over the row's figures and parameters must hold. `file` is relative to the work
    folder."""

    kind: SanityKind
    text: str  # the regex, or the expression
    file: str = "stdout"
    where: Location = NOWHERE


@dataclass
class Use:
    """A `<use>` entry: set names; a set from another file (`from=FILE[:NAME]`) is named
    `NAME@FILE`."""

    names: list[str]
    where: Location = NOWHERE


@dataclass
class Step:
    name: str
    depend: list[str] = field(default_factory=list)
    uses: list[Use] = field(default_factory=list)
    dos: list[Do] = field(default_factory=list)
    iterations: int = 1
    cycles: int = 1
    procs: int = 1
    shared: str = ""
    suffix: str = ""
    active: str = "true"
    export: bool = False
    max_async: str = "0"
    work_dir: str = ""
    do_log_file: str = ""
    where: Location = NOWHERE
    submit: bool = False  # caramel: the do's form one SLURM job script (templates/slurm/job.sh.j2)
    timeout: float | None = (
        None  # caramel: time limit of the step's do's in seconds (None: not set; 0: none)
    )
    # caramel: "" (one), "N" or "all": copies of each workpackage run at once (spec/limits.py)
    copies: str = ""
    copies_aggregate: str = (
        ""  # caramel: the result over the copies: "sum" (default) or "mean" (vocabulary)
    )
    estimator: str = ""  # caramel: how a mean and sd are taken (spec/estimator.py); "" is `all`
    repeats: int = 1  # caramel: N of `bench run --repeat N` (iterations holds N times the file's)
    sanity: list[Sanity] = field(
        default_factory=list
    )  # caramel: checks of each workpackage's output
    call: str = (
        ""  # caramel: `package.module:function` run through submitit instead of do's (spec/call.py)
    )
    call_where: Location = NOWHERE  # where the call is written
    # caramel: "" (the system's default), "false", "true" or "N" (at most N tasks at once):
    # spec/limits.py
    array: str = ""


@dataclass
class Pattern:
    name: str
    regex: str
    type: str = "string"
    mode: str = "pattern"
    unit: str = ""
    default: str | None = None
    dotall: bool = False
    reduce: str = "first"
    where: Location = NOWHERE
    direction: str = (
        ""  # declared: "lower" | "higher"; "": from the unit, else the name (spec.units)
    )


@dataclass
class Patternset:
    name: str
    patterns: list[Pattern] = field(default_factory=list)
    where: Location = NOWHERE


@dataclass
class AnalyseFile:
    path: str
    uses: list[str] = field(default_factory=list)
    where: Location = NOWHERE


@dataclass
class Analyse:
    step: str
    files: list[AnalyseFile] = field(default_factory=list)
    where: Location = NOWHERE


@dataclass
class Analyser:
    name: str
    uses: list[str] = field(default_factory=list)
    analyses: list[Analyse] = field(default_factory=list)
    reduce: bool = True
    where: Location = NOWHERE
    sanity: list[Sanity] = field(
        default_factory=list
    )  # caramel: checks of each analysed workpackage


@dataclass
class Column:
    name: str
    title: str = ""
    format: str = ""
    colw: str = ""
    where: Location = NOWHERE
    primekey: bool = False  # a database <key primekey="true">: part of the table's primary key


@dataclass
class Table:
    name: str
    output: TableOutput = TableOutput.TABLE
    style: str = "csv"
    sort: list[str] = field(default_factory=list)
    separator: str = ","
    transpose: bool = False
    filter: str = ""
    columns: list[Column] = field(default_factory=list)
    primekeys: list[str] = field(default_factory=list)
    db_file: str = ""
    where: Location = NOWHERE


@dataclass
class Result:
    uses: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    result_dir: str = ""
    where: Location = NOWHERE


@dataclass(frozen=True)
class BenchmarkMeta:
    """What a benchmark says about itself for catalogs and campaigns (caramel addition,
    docs/file-format.md).

    None means "not declared"; `time_limit` is in seconds (0: no limit); empty `systems`: any
    system.
    """

    description: str = ""
    tags: tuple[str, ...] = ()
    owner: str = ""
    precision: str = ""
    devices: int | None = None
    time_limit: float | None = None
    url: str = ""
    systems: tuple[str, ...] = ()
    multiple_results: str | None = None  # MAD's multiple-results CSV file name
    # its weight in a campaign's score (consumers/history/suite_score.py); None: 1
    weight: float | None = None
    # what a running workpackage shows (engine.logprogress): the last match of `progress` (groups:
    # iteration, iteration count) and of `progress_rate` (group: a rate in `progress_unit`) in
    # `progress_file` of its work folder; "" where the file declares none
    progress: str = ""
    progress_file: str = "stdout"
    progress_rate: str = ""
    progress_unit: str = ""
    where: Location = NOWHERE


@dataclass(frozen=True)
class Repeat:
    """How often `bench run` runs every workpackage (caramel: the benchmark's `repeat`, or
    `--repeat`): `times` times, or with `auto` until its figures converge (docs/cli.md,
    `--repeat auto`)."""

    times: int = 1
    auto: bool = False

    def __str__(self) -> str:
        return "auto" if self.auto else str(self.times)


@dataclass
class Benchmark:
    name: str
    outpath: str
    comment: str = ""
    file: str = ""
    home: str = "."
    tags: set[str] = field(default_factory=set)
    parametersets: dict[str, Parameterset] = field(default_factory=dict)
    substitutesets: dict[str, Substituteset] = field(default_factory=dict)
    filesets: dict[str, Fileset] = field(default_factory=dict)
    patternsets: dict[str, Patternset] = field(default_factory=dict)
    steps: dict[str, Step] = field(default_factory=dict)
    analysers: dict[str, Analyser] = field(default_factory=dict)
    results: list[Result] = field(default_factory=list)
    where: Location = NOWHERE
    system: SystemFacts | None = (
        None  # the caramel.adapters.systems.System a tag selected (None: no system file)
    )
    meta: BenchmarkMeta = field(default_factory=BenchmarkMeta)
    # caramel: `repeat: N|auto`, the default of `bench run --repeat`
    repeat: Repeat = field(default_factory=Repeat)
