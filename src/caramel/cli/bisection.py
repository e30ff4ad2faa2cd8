"""`bench bisect`'s parts below the command: what `--over` varies, the state kept between calls,
and which environment to try next.

The search is git bisect's over an ordered list: the first environment is known good, the last is
tried first (a last one that did not regress ends the search at once), then the environment
halfway between the last good and the first bad one, until they are neighbours. Halfway is git's
(`halfway`): the environments tried are those `git bisect` tries on a line of commits.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from caramel.errors import RunError
from caramel.vocabulary import Word

if TYPE_CHECKING:
    from caramel.stages.spec.model import Benchmark

STATE_FOLDER = "bisect"  # under the outpath: one JSON file per bisection
IMAGE_PARAMETER = "container_image"  # the system's image parameter (adapters/systems/model.py)
MODULES_PARAMETER = "system_modules"  # the system's modules, comma-separated
COMMIT_VARIABLE = "CARAMEL_COMMIT"  # what a benchmark building the software reads
COMMIT_REPO_VARIABLE = "CARAMEL_COMMIT_REPO"
OVER_HINT = (
    "--over env:NAME V1 V2 ..., param:NAME V1 ..., image IMAGE1 ..., module NAME/VERSION ..., "
    "or commit:REPO C1 C2 ... (or commit:REPO GOOD..BAD)"
)


class Kind(Word):
    """What `--over` varies from one environment to the next."""

    ENV = "env"  # an environment variable of the run
    PARAM = "param"  # a parameter of the benchmark
    IMAGE = "image"  # the container image (the parameter container_image)
    MODULE = "module"  # one module of the system's list, by its name
    COMMIT = "commit"  # a commit of a git repository, named by $CARAMEL_COMMIT


class Verdict(Word):
    """A step's verdict against the first environment (the good one)."""

    GOOD = "reference"  # the first environment itself
    REGRESSED = "regressed"
    NOT_REGRESSED = "not regressed"
    UNDECIDED = "undecided"
    FAILED = "failed"


_DEFAULT_NAMES = {Kind.IMAGE: IMAGE_PARAMETER, Kind.MODULE: MODULES_PARAMETER}


@dataclass(frozen=True)
class Over:
    """`--over KIND[:NAME] VALUE...`: the ordered environments, the first one good."""

    kind: Kind
    name: str  # the variable or parameter set to each value; the repository of commits
    values: tuple[str, ...]

    def spelled(self) -> str:
        """`--over`'s first word for this: `env:NAME`, `image` (its default parameter)."""
        default = _DEFAULT_NAMES.get(self.kind)
        return self.kind.value if self.name == default else f"{self.kind.value}:{self.name}"

    def describe(self, value: str) -> str:
        """How the environment is made: `SLOWDOWN_AT=3`, `container_image=x.sif`."""
        if self.kind is Kind.COMMIT:
            return f"{COMMIT_VARIABLE}={value}"
        return f"{self.name}={value}"


def parse_over(words: list[str]) -> Over:
    """`--over`'s words: the kind first, then at least two values (a commit range is resolved)."""
    if not words:
        raise RunError("--over needs a kind and its values", hint=OVER_HINT)
    head, values = words[0], list(words[1:])
    kind_text, _, name = head.partition(":")
    kind = _kind(head, kind_text)
    name = _name(head, kind, name)
    if kind is Kind.COMMIT:
        name = os.path.abspath(name)
        values = resolve_commits(name, values)
    _check_values(head, values)
    return Over(kind, name, tuple(values))


def _kind(head: str, text: str) -> Kind:
    try:
        return Kind(text)
    except ValueError:
        raise RunError(
            f"--over {head}: unknown kind '{text}', expected one of "
            + ", ".join(k.value for k in Kind),
            hint=OVER_HINT,
        ) from None


def _name(head: str, kind: Kind, name: str) -> str:
    """What the kind varies: the NAME env:, param: and commit: need; the others' default."""
    if kind in (Kind.ENV, Kind.PARAM, Kind.COMMIT) and not name:
        raise RunError(f"--over {head}: expected {kind}:NAME", hint=OVER_HINT)
    return name or _DEFAULT_NAMES.get(kind, "")


def _check_values(head: str, values: list[str]) -> None:
    """At least two values (the good one first), none given twice."""
    if len(values) < 2:
        raise RunError(
            f"--over {head}: {len(values)} value(s); a bisection needs the good one first and "
            "at least one more",
            hint=OVER_HINT,
        )
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise RunError(f"--over {head}: values given twice: {', '.join(repeated)}")


def _git(repo: str, *args: str) -> list[str]:
    try:
        done = subprocess.run(
            ["git", "-C", repo, *args], capture_output=True, text=True, check=False
        )
    except OSError as exc:
        raise RunError(f"--over commit:{repo}: git could not run: {exc}") from None
    if done.returncode:
        raise RunError(
            f"--over commit:{repo}: git {' '.join(args)}: {done.stderr.strip()}",
            hint="name a git repository and commits of it (hashes, tags, GOOD..BAD)",
        )
    return done.stdout.split()


def resolve_commits(repo: str, values: list[str]) -> list[str]:
    """Each value's full hash; `GOOD..BAD` is GOOD, then the first-parent line up to BAD, oldest
    first (`git rev-list --reverse --first-parent`)."""
    out: list[str] = []
    for value in values:
        if ".." in value:
            good = value.split("..", 1)[0]
            out += _git(repo, "rev-parse", "--verify", f"{good}^{{commit}}")
            out += _git(repo, "rev-list", "--reverse", "--first-parent", value)
        else:
            out += _git(repo, "rev-parse", "--verify", f"{value}^{{commit}}")
    return out


@contextlib.contextmanager
def environment(over: Over, value: str) -> Iterator[None]:
    """The process's environment while one environment's run is loaded and made (its jobs
    inherit it): the variable of `env:NAME`, or the commit and its repository."""
    changes = {}
    if over.kind is Kind.ENV:
        changes = {over.name: value}
    elif over.kind is Kind.COMMIT:
        changes = {COMMIT_VARIABLE: value, COMMIT_REPO_VARIABLE: over.name}
    before = {name: os.environ.get(name) for name in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for name, old in before.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def substitute(bench: Benchmark, over: Over, value: str) -> Benchmark:
    """`bench` with the parameter `over` names set to `value` in every parameter set that holds it
    (a module replaces the one of its name in the list, or joins it); env and commit: as it is."""
    import dataclasses

    if over.kind in (Kind.ENV, Kind.COMMIT):
        return bench
    found = False
    sets = {}
    for set_name, pset in bench.parametersets.items():
        params = []
        for param in pset.parameters:
            if param.name == over.name:
                found = True
                new = _module_list(param.value, value) if over.kind is Kind.MODULE else value
                param = dataclasses.replace(param, value=new.replace("$", "$$"))
            params.append(param)
        sets[set_name] = dataclasses.replace(pset, parameters=params)
    if not found:
        raise RunError(
            f"{bench.file}: no parameter '{over.name}' for --over {over.kind} to set",
            hint=f"the benchmark must declare {over.name} (or its system give it); "
            "--over env:NAME sets an environment variable instead",
        )
    return dataclasses.replace(bench, parametersets=sets)


def _module_list(modules: str, module: str) -> str:
    """The comma-separated `modules` with the one named as `module` (before its `/`) replaced."""
    name = module.split("/", 1)[0]
    kept = [m for m in modules.split(",") if m.strip() and m.strip().split("/", 1)[0] != name]
    return ",".join([*kept, module])


@dataclass
class Step:
    """One environment's run and its verdict against the first."""

    index: int
    value: str
    run_dir: str = ""
    verdict: Verdict = Verdict.UNDECIDED
    n: int = 0
    mean: float = float("nan")
    low: float = float("nan")  # the mean's interval (99 %, as the ratio's)
    high: float = float("nan")
    ratio: float = float("nan")  # mean / the first's mean, with its interval
    ratio_low: float = float("nan")
    ratio_high: float = float("nan")
    why: str = ""
    needed: int | None = None  # undecided: repetitions per side that would decide
    repeat_max: int = 0  # the most repeats it was allowed (an undecided step runs again with more)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        """A step as `State.save` wrote it (None: a figure not known)."""
        step = cls(int(data["index"]), str(data["value"]))
        for item in fields(cls):
            value = data.get(item.name)
            if item.name in ("index", "value") or value is None:
                continue
            setattr(step, item.name, Verdict(value) if item.name == "verdict" else value)
        return step


@dataclass
class State:
    """A bisection as kept in `<outpath>/bisect/<name>.json`: the command that made it and its
    steps by environment index."""

    path: str
    arguments: list[str]
    steps: dict[int, Step] = field(default_factory=dict)

    def save(self) -> None:
        from caramel.fs.writes import replacing

        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        doc = {
            "arguments": self.arguments,
            "steps": [_plain(asdict(step)) for _, step in sorted(self.steps.items())],
        }
        with replacing(self.path) as handle:
            handle.write(json.dumps(doc, indent=1) + "\n")

    @classmethod
    def load(cls, path: str) -> State:
        try:
            with open(path, encoding="utf-8") as handle:
                doc = json.load(handle)
            steps = [Step.from_dict(item) for item in doc["steps"]]
            return cls(path, list(doc["arguments"]), {s.index: s for s in steps})
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RunError(
                f"{path}: not a bisection's state: {exc}",
                hint="remove it to start the bisection again",
            ) from None


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """JSON has no NaN: None stands for a figure not known."""
    return {k: (None if isinstance(v, float) and v != v else v) for k, v in data.items()}


def state_path(outpath: str, benchmark: str, identity: dict[str, Any]) -> str:
    """The state file of the bisection `identity` (file, tags, --over, figure...) describes: the
    same command finds the same file."""
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:10]
    return os.path.join(outpath, STATE_FOLDER, f"{benchmark}-{digest}.json")


def newest_state(outpath: str) -> str:
    """The bisection last written under `outpath` (`bench bisect --continue`)."""
    folder = os.path.join(outpath, STATE_FOLDER)
    try:
        found = [os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".json")]
    except OSError:
        found = []
    if not found:
        raise RunError(
            f"{folder}: no bisection to continue",
            hint="bench bisect FILE --tag ... --over KIND LIST starts one; -o names its outpath",
        )
    return max(found, key=os.path.getmtime)


@dataclass(frozen=True)
class Bounds:
    """Where the search stands: the last good and first bad indexes known, and the next to try
    (None: done)."""

    good: int
    bad: int | None
    next: int | None


def next_step(steps: dict[int, Step], count: int) -> Bounds:
    """Which environment to try next, from the verdicts so far (`count` environments): the last
    one first, then halfway between the last good and the first bad (git's find_bisection)."""
    last = count - 1
    if not _judged(steps, 0, (Verdict.GOOD,)):
        return Bounds(0, None, 0)
    if not _judged(steps, last, (Verdict.REGRESSED, Verdict.NOT_REGRESSED)):
        return Bounds(0, None, last)
    bad = _first_bad(steps)
    if bad is None:
        return Bounds(last, None, None)  # the last did not regress: nothing to find
    good = _last_good(steps, bad)
    if bad - good <= 1:
        return Bounds(good, bad, None)
    return Bounds(good, bad, good + halfway(bad - good))


def _first_bad(steps: dict[int, Step]) -> int | None:
    """The first environment that regressed; None while none did."""
    return min((i for i, s in steps.items() if s.verdict is Verdict.REGRESSED), default=None)


def _last_good(steps: dict[int, Step], bad: int) -> int:
    """The last environment before `bad` that did not regress (the first one is good)."""
    return max(
        [0, *(i for i, s in steps.items() if i < bad and s.verdict is Verdict.NOT_REGRESSED)]
    )


def _judged(steps: dict[int, Step], index: int, verdicts: tuple[Verdict, ...]) -> bool:
    """Whether the environment at `index` was run and judged one of `verdicts`."""
    return index in steps and steps[index].verdict in verdicts


def halfway(candidates: int) -> int:
    """Which of `candidates` environments on a line (the first bad one last) git tries, counted
    from 1: `do_find_bisection` (git's bisect.c) weighs each candidate by the candidates up to it
    and, oldest first, returns the first whose weight `w` is halfway (`approx_halfway`: 2w - nr
    in {-1, 0, 1}, or within nr/1024 of it); the oldest (weight 1, set before the loop) is never
    tested so. None halfway: `best_bisection`, the first of the largest min(w, nr - w)."""
    for weight in range(2, candidates + 1):
        off = 2 * weight - candidates
        if off in (-1, 0, 1) or abs(off) < candidates // 1024:
            return weight
    return max(range(1, candidates + 1), key=lambda w: (min(w, candidates - w), -w))


def estimate_steps(candidates: int) -> int:
    """git's `estimate_bisect_steps` (bisect.c): the steps left for `candidates` revisions."""
    if candidates < 3:
        return 0
    power = candidates.bit_length() - 1
    whole = 1 << power
    return power if whole < 3 * (candidates - whole) else power - 1
