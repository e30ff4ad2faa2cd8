"""The grammar of every file caramel reads, as data: one place the loaders check against, the
reference tables of docs/file-format.md are generated from, and the JSON Schemas editors use.

    grammar.ELEMENTS["step"].attr_names()     # what a <step> (YAML: a step mapping) may carry
    grammar.SYSTEM_KEYS                       # the settings of a system file
    grammar.TARGET_KEYS, grammar.MAD_KEYS     # a targets file's reference keys, a models.json
    entry's keys

Benchmark files (XML and YAML) share one tree (spec/tree.py): an element has attributes, a text and
child elements; in YAML a key naming a child element opens children, `_` is the text, every other
key an attribute. JUBE 2.7's DTD (contrib/schema/jube.dtd) fixes its elements and attributes;
caramel's additions are marked `caramel=True`. Rendering (markdown, JSON Schema) is
spec/grammar_out.py's; the check of a read tree against this grammar is spec/keycheck.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# what a value is: the JSON Schema type it gets and the words the docs use for it
Kind = Literal["text", "bool", "int", "number", "choice", "list", "mapping", "duration", "repeat"]
# whether an element has a text: none, may have one, must have one
TextUse = Literal["none", "optional", "required"]
# the formats an element's children are written in
Format = Literal["both", "xml", "yaml"]


@dataclass(frozen=True)
class Key:
    """An attribute of an element, or a key of a system, targets or models.json mapping."""

    name: str
    doc: str
    kind: Kind = "text"
    default: str = ""
    choices: tuple[str, ...] = ()
    required: bool = False
    caramel: bool = False  # a caramel addition (JUBE does not know it)


@dataclass(frozen=True)
class Child:
    """An element that may stand inside another; `only` when one format knows it there."""

    tag: str
    only: Format = "both"


@dataclass(frozen=True)
class Element:
    """A benchmark file's element: its attributes, its children and whether it has a text."""

    tag: str
    doc: str
    attrs: tuple[Key, ...] = ()
    children: tuple[Child, ...] = ()
    text: TextUse = "none"
    caramel: bool = False

    def attr_names(self) -> tuple[str, ...]:
        """Every attribute it may carry, `tag` (which every element may carry) included."""
        return tuple(a.name for a in self.attrs) + (TAG.name,)

    def child_tags(self, fmt: Format = "both") -> tuple[str, ...]:
        """The tags of its children in `fmt` ("both": in either format)."""
        return tuple(c.tag for c in self.children if fmt == "both" or c.only in ("both", fmt))


TAG = Key("tag", "a tag expression; the element is dropped unless it holds for the run's tags")
TEXT_KEY = "_"  # YAML: the element's text


def _k(
    name: str,
    doc: str,
    kind: Kind = "text",
    default: str = "",
    choices: tuple[str, ...] = (),
    required: bool = False,
    caramel: bool = False,
) -> Key:
    return Key(name, doc, kind, default, choices, required, caramel)


def _c(*tags: str, only: Format = "both") -> tuple[Child, ...]:
    return tuple(Child(t, only) for t in tags)


BOOL = ("true", "false")
NAME = _k("name", "the name other elements use", required=True)
INIT_WITH = _k("init_with", "FILE[:NAME]: start from a set of another file; local entries override")
SEPARATOR = _k(
    "separator", "what splits the text into a list of values (empty: never split)", default=","
)
ACTIVE = _k("active", "a condition; false skips it (evaluated after substitution)", default="true")
WORK_DIR = _k("work_dir", "the folder it runs in (relative to the work folder)")
STDOUT = _k("stdout", "file receiving its standard output", default="stdout")
STDERR = _k("stderr", "file receiving its standard error", default="stderr")
TYPE = _k(
    "type",
    "the value's type (others are strings, as JUBE treats them)",
    "choice",
    "string",
    ("string", "int", "float", "str"),
)
UNIT = _k("unit", "the value's unit (tokens/s, s, Wh ...): a figure of the history")
DIRECTION = _k(
    "direction", "which way the figure is better", "choice", "", ("lower", "higher"), caramel=True
)
FILTER = _k("filter", "a condition a row must meet to be shown")
SORT = _k("sort", "columns to sort by (comma-separated)")
FORMAT = _k("format", "a format for the value, e.g. .2f")
TITLE = _k("title", "the column's heading")
FILE_ENTRY = (
    _k("directory", "the folder the file is taken from (JUBE's older name of source_dir)"),
    _k("source_dir", "the folder the file is taken from"),
    _k("target_dir", "the folder (in the work folder) it goes to"),
    _k("name", "its name in the work folder (default: its own)"),
    SEPARATOR,
    ACTIVE,
    _k(
        "rel_path_ref",
        "external: benchmark file's folder; internal: work folder",
        "choice",
        "external",
        ("external", "internal"),
    ),
    _k("file_path_ref", "the folder relative paths start from"),
)
DO_KEYS = (
    _k("done_file", "a file whose appearance ends the step (makes it asynchronous)"),
    _k("error_file", "a file whose appearance fails the step"),
    _k("break_file", "a file whose appearance stops further cycles"),
    STDOUT,
    STDERR,
    _k(
        "shared", "run once in the step's shared folder, not per workpackage", "bool", "false", BOOL
    ),
    ACTIVE,
    WORK_DIR,
)
SANITY_KEYS = (
    _k("expect", "a regular expression that must match the file", caramel=True),
    _k("reject", "a regular expression that must not match the file", caramel=True),
    _k("expr", "an expression over the figures that must hold", caramel=True),
    _k("file", "the file of the work folder the regex reads", default="stdout", caramel=True),
    _k("step", "inside <comment> (XML): the step it checks", caramel=True),
    _k("analyser", "inside <comment> (XML): the analyser it checks", caramel=True),
    _k("analyzer", "the same as analyser", caramel=True),
)
# the meta block's keys (spec/meta.py reads them; each is a child element or an attribute of <meta>)
META_KEYS = (
    _k("description", "what the benchmark measures", caramel=True),
    _k("owner", "who answers for it", caramel=True),
    _k("precision", "the numeric precision (bf16, fp32 ...)", caramel=True),
    _k("url", "where it comes from", caramel=True),
    _k("multiple_results", "MAD's multiple-results CSV file name", caramel=True),
    _k("tags", "words to select it by (a list, or comma-separated)", "list", caramel=True),
    _k("systems", "the systems it supports (none: any)", "list", caramel=True),
    _k("devices", "the devices it needs (a whole number of at least 1)", "int", caramel=True),
    _k(
        "time_limit",
        "seconds, MM:SS, HH:MM:SS or D-HH:MM:SS; 0 is no limit",
        "duration",
        caramel=True,
    ),
    _k(
        "weight",
        "its weight in the suite's score (milabench's), at least 0",
        "number",
        "1",
        caramel=True,
    ),
    _k(
        "progress",
        "a running workpackage's progress: a pattern, groups iteration and total",
        caramel=True,
    ),
    _k("progress_file", "the work folder's file progress reads", default="stdout", caramel=True),
    _k("progress_rate", "a pattern whose group is the rate shown beside it", caramel=True),
    _k("progress_unit", "the rate's unit as shown (s/iteration)", caramel=True),
)
STEP_KEYS = (
    NAME,
    _k("depend", "the steps it follows (comma-separated)"),
    _k("iterations", "how often each workpackage runs", "int", "1"),
    _k("cycles", "how often its do's repeat inside one workpackage", "int", "1"),
    _k("procs", "how many workpackages run at once", "int", "1"),
    _k(
        "max_async", "how many asynchronous workpackages may wait at once (0: no limit)", "int", "0"
    ),
    _k("shared", "the name of a folder its workpackages share"),
    _k("suffix", "a suffix of its work folders' names"),
    ACTIVE,
    _k("export", "pass its parameters to the environment of later steps", "bool", "false", BOOL),
    WORK_DIR,
    _k("do_log_file", "a file recording the do's as a shell script"),
    _k(
        "submit",
        "its do's form one job of the system's scheduler",
        "bool",
        "false",
        BOOL,
        caramel=True,
    ),
    _k("timeout", "a time limit: seconds, MM:SS or HH:MM:SS (0: none)", "duration", caramel=True),
    _k(
        "copies",
        "copies of each workpackage run at once (a number, or all: one per device)",
        caramel=True,
    ),
    _k(
        "copies_aggregate",
        "the result over its copies",
        "choice",
        "sum",
        ("sum", "mean"),
        caramel=True,
    ),
    _k(
        "array",
        "submit steps: one job array (true, false, or at most N tasks at once)",
        caramel=True,
    ),
    _k("estimator", "how the history estimates its figures over iterations", caramel=True),
)

ELEMENTS: dict[str, Element] = {
    e.tag: e
    for e in (
        Element(
            "jube",
            "the root (XML); a YAML file is its content",
            (_k("version", "the JUBE version the file was written for"),),
            _c(
                "benchmark",
                "parameterset",
                "substituteset",
                "fileset",
                "patternset",
                "selection",
                "include-path",
                "check_tags",
                "tags",
            )
            + _c("include", only="xml"),
        ),
        Element(
            "benchmark",
            "one benchmark; several may share a file and its global sets",
            (
                NAME,
                _k(
                    "outpath",
                    "where runs go (<outpath>/<6-digit run id>/), relative to the file",
                    required=True,
                ),
                _k("file_path_ref", "the folder relative paths start from", default="."),
                _k(
                    "repeat",
                    "runs per workpackage: N, or auto until its figures converge",
                    "repeat",
                    "1",
                    caramel=True,
                ),
            ),
            _c(
                "comment",
                "parameterset",
                "substituteset",
                "fileset",
                "patternset",
                "step",
                "analyser",
                "analyzer",
                "result",
            )
            + _c("include", only="xml")
            + _c("meta", only="yaml"),
        ),
        Element(
            "comment",
            "free text (XML: may hold caramel's meta and sanity, which JUBE does not read)",
            children=_c("meta", "sanity", only="xml"),
            text="optional",
        ),
        Element(
            "meta",
            "what a benchmark says about itself (below); XML: each key also a child element",
            META_KEYS,
            caramel=True,
        ),  # XML: each key a child element (or an attribute) of <meta>
        Element(
            "parameterset",
            "parameters; init_with starts from a set of another file",
            (
                NAME,
                INIT_WITH,
                _k(
                    "duplicate",
                    "what a second parameter of one name does",
                    "choice",
                    "replace",
                    ("replace", "concat", "error"),
                ),
            ),
            _c("parameter") + _c("zip", "exclude") + _c("include", only="xml"),
        ),
        Element(
            "parameter",
            "a value, or a space of values split at separator",
            (
                NAME,
                TYPE,
                _k(
                    "mode",
                    "how the value is made",
                    "choice",
                    "text",
                    ("text", "python", "shell", "perl", "env", "tag"),
                ),
                SEPARATOR,
                _k("export", "put it into the environment of the do's", "bool", "false", BOOL),
                _k(
                    "update_mode",
                    "when a dependent step evaluates it again",
                    "choice",
                    "never",
                    ("never", "use", "step", "cycle", "always"),
                ),
                _k(
                    "duplicate",
                    "what a second definition of it does",
                    "choice",
                    "none",
                    ("none", "replace", "concat", "error"),
                ),
                UNIT,
            ),
            _c("value", only="xml"),
            text="optional",
        ),
        Element("value", "XML: the parameter's value as an element", text="optional"),
        Element(
            "zip",
            "parameters varying together (the i-th values go together), each in one zip",
            (_k("names", "the parameters (comma-separated)", caramel=True),),
            _c("param"),
            text="optional",
            caramel=True,
        ),
        Element("param", "one parameter of a zip", text="required", caramel=True),
        Element(
            "exclude",
            "a Python condition after substitution; a matching combination is dropped",
            (_k("if", "the condition (or the element's text)", caramel=True),),
            text="optional",
            caramel=True,
        ),
        Element(
            "substituteset",
            "files whose text is substituted",
            (NAME, INIT_WITH),
            _c("iofile", "sub") + _c("include", only="xml"),
        ),
        Element(
            "iofile",
            "a file substituted into another",
            (
                _k("in", "the file read", required=True),
                _k("out", "the file written", required=True),
                _k("out_mode", "write or append", "choice", "w", ("w", "a")),
            ),
        ),
        Element(
            "sub",
            "one replacement",
            (
                _k("source", "the text replaced", required=True),
                _k("dest", "what replaces it (or the text)"),
                _k(
                    "mode",
                    "plain text or a regular expression",
                    "choice",
                    "text",
                    ("text", "regex"),
                ),
            ),
            text="optional",
        ),
        Element(
            "fileset",
            "files copied or linked into each work folder",
            (NAME, INIT_WITH),
            _c("copy", "link", "prepare") + _c("include", only="xml"),
        ),
        Element("copy", "a file copied into the work folder", FILE_ENTRY, text="required"),
        Element("link", "a file linked into the work folder", FILE_ENTRY, text="required"),
        Element(
            "prepare",
            "a command run in the work folder before the step",
            (STDOUT, STDERR, ACTIVE, WORK_DIR),
            text="required",
        ),
        Element(
            "patternset",
            "regular expressions over logs (analysis)",
            (NAME, INIT_WITH),
            _c("pattern") + _c("include", only="xml"),
        ),
        Element(
            "pattern",
            "one figure read from a log",
            (
                NAME,
                TYPE,
                _k(
                    "mode",
                    "how the text is read",
                    "choice",
                    "pattern",
                    ("pattern", "text", "python", "perl", "shell"),
                ),
                UNIT,
                _k("default", "the value when nothing matches"),
                _k("dotall", "`.` also matches a newline", "bool", "false", BOOL),
                _k("reduce", "which match counts", default="first"),
                DIRECTION,
            ),
            text="optional",
        ),
        Element(
            "step",
            "what runs for each workpackage",
            STEP_KEYS,
            _c("use", "do") + _c("sanity", "call", "figure") + _c("include", only="xml"),
        ),
        Element(
            "use",
            "the sets a step, analyser or result uses; names may hold $parameter",
            (_k("from", "FILE[:NAME...]: sets of another file"),),
            text="required",
        ),
        Element("do", "one shell command", DO_KEYS, text="required"),
        Element(
            "call",
            "instead of do's: package.module:function, called once per workpackage",
            text="required",
            caramel=True,
        ),
        Element(
            "figure",
            "in a call step: one figure the function returns",
            (
                _k("name", "the figure's name", required=True, caramel=True),
                UNIT,
                DIRECTION,
                _k(
                    "type",
                    "the figure's type",
                    "choice",
                    "float",
                    ("float", "int", "string"),
                    caramel=True,
                ),
            ),
            caramel=True,
        ),
        Element(
            "sanity",
            "a check of each workpackage: one of expect, reject, expr",
            SANITY_KEYS,
            caramel=True,
        ),
        Element(
            "analyser",
            "which files of which step are read with which patternsets",
            (NAME, _k("reduce", "combine the iterations of a workpackage", "bool", "true", BOOL)),
            _c("use", "analyse") + _c("sanity") + _c("include", only="xml"),
        ),
        Element(
            "analyzer",
            "the same as analyser",
            (NAME, _k("reduce", "combine the iterations of a workpackage", "bool", "true", BOOL)),
            _c("use", "analyse") + _c("sanity") + _c("include", only="xml"),
        ),
        Element(
            "analyse",
            "the files of one step",
            (_k("step", "the step", required=True),),
            _c("file") + _c("include", only="xml"),
        ),
        Element(
            "file",
            "a file of the work folder (comma-separated names)",
            (_k("use", "patternsets for this file only"),),
            text="required",
        ),
        Element(
            "result",
            "result tables",
            (_k("result_dir", "where the tables are written"),),
            _c("use", "table", "database", "syslog") + _c("include", only="xml"),
        ),
        Element(
            "table",
            "a table of the results",
            (
                NAME,
                _k(
                    "style",
                    "its layout",
                    "choice",
                    "csv",
                    ("csv", "pretty", "aligned", "markdown", "json"),
                ),
                SEPARATOR,
                _k("transpose", "rows as columns", "bool", "false", BOOL),
                SORT,
                FILTER,
            ),
            _c("column") + _c("include", only="xml"),
        ),
        Element(
            "column",
            "a column: a parameter or pattern name",
            (
                _k("colw", "its width"),
                FORMAT,
                TITLE,
                _k("primekey", "a key column", "bool", "false", BOOL),
            ),
            text="required",
        ),
        Element(
            "database",
            "results into SQLite",
            (
                NAME,
                _k("primekeys", "key columns (comma-separated)"),
                _k("file", "the database file"),
                FILTER,
            ),
            _c("key") + _c("include", only="xml"),
        ),
        Element(
            "syslog",
            "results to a syslog server",
            (
                NAME,
                _k("address", "a socket path"),
                _k("host", "the server"),
                _k("port", "its port", "int"),
                FORMAT,
                SORT,
                FILTER,
            ),
            _c("key") + _c("include", only="xml"),
        ),
        Element(
            "key",
            "a column of a database or syslog",
            (FORMAT, TITLE, _k("primekey", "a key column", "bool", "false", BOOL)),
            text="required",
        ),
        Element(
            "include",
            "replaced by the elements at path of another file",
            (
                _k("from", "the file", required=True),
                _k("path", "which elements (a/b, ., //a)", default="."),
            ),
        ),
        Element(
            "include-path",
            "folders searched for init_with, use from= and include files",
            children=_c("path"),
            text="optional",
        ),
        Element("path", "one folder of the include path", text="required"),
        Element(
            "selection",
            "which benchmarks of the file run; its tags are always added",
            children=_c("only", "not", "tag"),
        ),
        Element("only", "run only these benchmarks (comma-separated)", text="required"),
        Element("not", "do not run these benchmarks", text="required"),
        Element(
            "tag",
            "tags added to the run's tags (selection) or declared (tags)",
            (_k("name", "the tag (in <tags>)"),),
            text="optional",
        ),
        Element(
            "tags",
            "tags and required tag combinations",
            (_k("forced", "JUBE: tags always set"),),
            _c("tag", "check_tags"),
        ),
        Element("check_tags", "a tag expression the run's tags must meet", text="required"),
    )
}

# YAML: elements written as mappings (a name and settings), where a plain text is a mistake; the
# others may be a plain text (`do: echo hi`) or a mapping with `_` for the text
YAML_MAPPINGS = frozenset(
    {
        "benchmark",
        "parameterset",
        "substituteset",
        "fileset",
        "patternset",
        "step",
        "analyser",
        "analyzer",
        "table",
        "database",
        "syslog",
        "parameter",
        "pattern",
        "iofile",
        "sub",
        "analyse",
        "sanity",
        "figure",
    }
)
# YAML: the top-level keys that stay beside the benchmark when a file has no `benchmark:` key
YAML_ROOT_ONLY = frozenset({"selection", "include-path", "check_tags", "tags"})

# Names real JUBE files write that JUBE 2.7 reads nowhere (CARAML's three files carry both): known,
# so an editor's schema accepts them and --strict does not refuse a file JUBE runs, yet every load
# warns that they do nothing, since their authors meant something by them
IGNORED_KEYS: dict[str, dict[str, str]] = {
    "parameter": {"seperator": "a misspelling of 'separator': the text is split at ','"},
    "do": {"mode": "JUBE reads no mode on a do: the command runs in the shell as given"},
}

# A system file's other names for a setting: files written for SLURM say `extra_sbatch`
SYSTEM_ALIASES: dict[str, str] = {"extra_sbatch": "scheduler_options"}

# XML attributes that belong to XML itself (namespaces, schema locations), not to JUBE
XML_ATTRIBUTE_PREFIXES = ("{", "xmlns")


def choices(tag: str, attr: str) -> tuple[str, ...]:
    """The values attribute `attr` of element `tag` allows."""
    return next(k.choices for k in ELEMENTS[tag].attrs if k.name == attr)


def children_of(tag: str, fmt: Format = "both") -> set[str]:
    """The child tags element `tag` may hold (in format `fmt`)."""
    return set(ELEMENTS[tag].child_tags(fmt))


# --- system files (systems/loader.py)
# --------------------------------------------------------------
SYSTEM_KEYS: tuple[Key, ...] = (
    _k("name", "the system's name; it must equal the file's name (the tag that selects it)"),
    _k(
        "scheduler", "how jobs run here: a registered scheduler (local, slurm ...)", default="local"
    ),
    _k("description", "one line about the system"),
    _k("partition", "the partition (queue) jobs go to"),
    _k("account", "the account jobs are charged to"),
    _k("nodes", "nodes a job takes by default", "int", "1"),
    _k("max_nodes", "the most nodes a job may take (0: not stated)", "int", "0"),
    _k("gpus_per_node", "accelerators per node", "int", "0"),
    _k("accelerator", "nvidia, amd ...: what a container must expose"),
    _k("cpus_per_task", "cores per task", "int", "1"),
    _k("cpus_per_device", "cores for one task per device (0: cpus_per_task shared)", "int", "0"),
    _k("tasks_per_node", "tasks per node", "int", "1"),
    _k("gres", "generic resources a job asks for (gpu:4)"),
    _k("time_limit", "a job's time limit (HH:MM:SS)"),
    _k("launcher", "the parallel launcher (srun; nothing locally)"),
    _k("launcher_args", "arguments of the launcher"),
    _k("modules", "environment modules loaded before a job", "list"),
    _k("env", "environment variables of a job (NAME: VALUE)", "mapping"),
    _k("container_runtime", "apptainer, docker ... ('' : none)"),
    _k("image_dir", "the site's folder of container images"),
    _k("data_dir", "the site's folder of data sets", default="data"),
    _k("images", "image file per software stack (pytorch: x.sif)", "mapping"),
    _k("energy_method", "how energy is measured ('' : none)"),
    _k("peak_tflops", "peak rate per device in TFLOP/s (bench predict --from)", "number", "0"),
    _k(
        "scheduler_options",
        "more directive lines of the job script (#SBATCH, #PBS); alias `extra_sbatch`",
        "list",
    ),
    _k("job_array", "a submit step's default array: (true, false or N)"),
    _k("max_array_size", "the scheduler's largest job array (0: ask it)", "int", "0"),
)

# --- targets files (history/targets.py): the keys of one reference mapping ------------------------
TARGETS_SYSTEMS_KEY = "systems"
TARGET_KEYS: tuple[Key, ...] = (
    _k("value", "the reference value, in the figure's unit", "number", required=True),
    _k("lower", "relative bound below the value (-0.05 or '-5%')"),
    _k("upper", "relative bound above the value (0.2 or '+20%')"),
    _k("min", "absolute lower bound, in the figure's unit", "number"),
    _k("max", "absolute upper bound, in the figure's unit", "number"),
    _k("threshold", "percent in the bad direction (the flat form's tolerance)", "number"),
    _k("unit", "the unit of value, min and max (converted into the figure's: ms, tokens/s)"),
    _k("max_sd", "the most a benchmark's sd% may be ('5%')"),
)

# --- MAD's models.json entries (spec/mad.py)
# -------------------------------------------------------
MAD_KEYS: tuple[Key, ...] = (
    _k("name", "framework_project_workload: letters, digits, _ . + -", required=True),
    _k("url", "the repository cloned into the work folder"),
    _k("dockerfile", "MAD's Dockerfile, relative to the MAD folder (kept as data)"),
    _k(
        "scripts",
        "a folder with run.sh, or a .sh/.py script, relative to models.json",
        required=True,
    ),
    _k("data", "MAD's data name"),
    _k("n_gpus", 'GPUs it takes, a whole number as a text; "-1": every GPU', default="1"),
    _k("timeout", "seconds, up to 2147483647; 0 or less: madengine's 7200", "number", "7200"),
    _k("owner", "who answers for it"),
    _k("training_precision", "fp16, bf16 ..."),
    _k("tags", "words to select it by", "list"),
    _k("multiple_results", "the CSV file its script writes"),
    _k("args", "arguments of its script"),
    _k("cred", "MAD: credentials name (kept as data)"),
    _k("skip_gpu_arch", "MAD: GPU architectures it skips (kept as data)"),
    _k("additional_docker_run_options", "MAD: docker options (kept as data)"),
    _k("distributed", "madengine: distributed settings (kept as data)", "mapping"),
    _k("env_vars", "madengine: environment variables (kept as data)", "mapping"),
    _k("description", "what it measures"),
)


def names(keys: tuple[Key, ...]) -> tuple[str, ...]:
    return tuple(k.name for k in keys)
