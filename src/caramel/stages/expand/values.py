"""Parameter values during expansion, and their evaluation (JUBE's substitution loop).

A `Value` is one parameter of one (partial) workpackage: still a template (several choices),
still a script (python/shell/...) waiting for its inputs, or a plain text. `settle()` substitutes
and evaluates a whole set in dependency order, as far as it can before a template must be split.
"""

from __future__ import annotations

import builtins
import math
import os
import re
import selectors
import subprocess
import tempfile
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace

from caramel.errors import ExpandError, Location, did_you_mean
from caramel.settings import current
from caramel.stages.expand.substitute import escape, has_placeholder, references, substitute
from caramel.stages.spec.model import SCRIPT_MODES, Parameter

MAX_PASSES = 5  # JUBE's MAX_RECURSIVE_SUB
SHELL_TIMEOUT = 600
# `jube_wp_envstr`'s definition: once its `export NAME=$NAME` lines are substituted, the values are
# quoted
ENVSTR = Parameter("jube_wp_envstr", "", separator="")
READ_BLOCK = 1 << 16  # bytes of a shell parameter's output read at a time


@dataclass(frozen=True)
class Cap:
    """At most `most` values separated by `separator` in a script parameter's result: a result
    beyond is refused as it is produced (a shell's output while it is read, a python result before
    it is split), since no plan could hold that many workpackages."""

    separator: str
    most: int

    def over(self, count: int) -> bool:
        return bool(self.separator) and count > self.most


class TooManyValues(Exception):
    """A parameter's result holds more values than its Cap allows: `seen` values counted, all of
    them, or (`stopped`) as far as its command was read before it was killed. The expansion that
    set the cap words the refusal (space.expand_space)."""

    def __init__(self, seen: int, stopped: bool = False, name: str = "") -> None:
        super().__init__(seen)
        self.seen = seen
        self.stopped = stopped
        self.name = name


@dataclass(slots=True)
class Value:
    """One parameter's state inside one workpackage's parameter set."""

    definition: Parameter  # where it came from: mode, type, update_mode, export, source line
    text: str  # current text (a template's joined choices while it is a template)
    mode: str  # the definition's mode until evaluated, then "text"
    choices: tuple[str, ...] | None = None  # set while it is a template (a space of values)
    idx: int = -1  # which choice of the root template this value is
    derived: bool = False  # changed from its definition (substituted, evaluated or chosen)
    fixed: bool = False  # final value of a created workpackage: `$` in it is literal

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def is_script(self) -> bool:
        return self.mode in SCRIPT_MODES

    @property
    def update_mode(self) -> str:
        return self.definition.update_mode

    def root_text(self) -> str:
        d = self.definition
        parts = (
            d.value.split(d.separator) if d.separator and d.mode not in SCRIPT_MODES else [d.value]
        )
        return d.separator.join(p.strip() for p in parts) if len(parts) > 1 else d.value

    def equivalent(self, other: Value) -> bool:
        """JUBE's notion: same definition, and when both were resolved, the same value and
        choice."""
        if self.root_text() != other.root_text():
            return False
        if self.derived != other.derived:  # one resolved, the other not
            return True
        return self.text == other.text and (not self.derived or self.idx == other.idx)


def from_definition(param: Parameter) -> Value:
    """A fresh value for a definition: a template when its text splits into several values."""
    return _make(param, param.value, param.mode, derived=False)


def _make(
    param: Parameter, text: str, mode: str, derived: bool, idx: int = -1, most: int | None = None
) -> Value:
    if mode not in SCRIPT_MODES and param.separator and param.separator in text:
        parts = _split(param, text, most)
        if len(parts) > 1:
            return Value(param, param.separator.join(parts), mode, parts, idx, derived)
    return Value(param, text, mode, None, idx, derived)


def _split(param: Parameter, text: str, most: int | None) -> tuple[str, ...]:
    """A text's values at the parameter's separator, stripped; more than `most` is refused,
    counted before the split makes each value (TooManyValues)."""
    count = text.count(param.separator) + 1
    if most is not None and count > most:
        raise TooManyValues(count, name=param.name)
    return tuple(p.strip() for p in text.split(param.separator))


def expand_template(value: Value) -> list[Value]:
    """The static values of a template, in order."""
    assert value.choices is not None
    indices = range(len(value.choices)) if value.idx == -1 else [value.idx]
    return [Value(value.definition, value.choices[i], "text", None, i, True) for i in indices]


def constants(values: dict[str, Value]) -> dict[str, str]:
    """Values usable for substitution now: resolved texts (fixed ones made literal)."""
    out = {}
    for name, v in values.items():
        if v.choices is None and v.mode not in SCRIPT_MODES:
            out[name] = escape(v.text) if v.fixed and "$" in v.text else v.text
    return out


def _may_change(v: Value) -> bool:
    """A value a pass may change: not fixed, not a template, and holding a `$` or a script."""
    return v.choices is None and not v.fixed and ("$" in v.text or v.mode in SCRIPT_MODES)


def _order(values: dict[str, Value]) -> list[str]:
    """Names still to resolve, in dependency order (after what they refer to); cycles left out as
    JUBE does.

    Only texts holding a `$` or a script can change, so only those are ordered.
    """
    deps = {name: references(v.text) for name, v in values.items() if _may_change(v)}
    remaining = {name: _among(refs, deps, name) for name, refs in deps.items()}
    return _in_dependency_order(remaining)


def _among(refs: frozenset[str], deps: dict[str, frozenset[str]], name: str) -> set[str]:
    """The references to the other values being ordered."""
    return {r for r in refs if r in deps and r != name}


def _in_dependency_order(remaining: dict[str, set[str]]) -> list[str]:
    """In rounds, the names whose dependencies are all placed (in the given order); names in a
    cycle, or depending on one, are left out."""
    order: list[str] = []
    done: set[str] = set()
    while ready := [n for n, d in remaining.items() if d <= done]:
        for n in ready:
            del remaining[n]
        order += ready
        done.update(ready)
    return order


def settle(
    values: dict[str, Value], tags: Collection[str] = frozenset(), most: int | None = None
) -> None:
    """Substitute and evaluate in place until nothing changes or a template appears; a value that
    would split into more than `most` values is refused (TooManyValues) before it is split."""
    for _ in range(MAX_PASSES):
        if any(v.choices is not None for v in values.values()):
            return
        order = _order(values)
        changed = _Pass(values, tags, False, most).run(order)
        if not changed:
            changed = _Pass(values, tags, True, most).run(order)
        if not changed:
            return


@dataclass
class _Pass:
    """One pass of substitution and evaluation over the values, in dependency order."""

    values: dict[str, Value]
    tags: Collection[str]
    force: bool  # evaluate scripts with placeholders left, and leave as they are those that fail
    most: int | None
    consts: dict[str, str] | None = None  # built once per pass, kept current as values change

    def run(self, order: list[str]) -> bool:
        """Whether any value changed."""
        changed = False
        for name in order:
            new = self._resolved(self.values[name])
            if new is not None:
                self.values[name] = new
                self._track(name, new)
                changed = True
        return changed

    def _constants(self) -> dict[str, str]:
        if self.consts is None:
            self.consts = constants(self.values)
        return self.consts

    def _resolved(self, v: Value) -> Value | None:
        """`v` substituted (and evaluated); None where it cannot change now."""
        if not _may_change(v):
            return None  # nothing to substitute or evaluate
        refs = references(v.text)
        if _refers_to_unsettled(refs, self.values):
            return None
        text, mode = self._substituted(v, refs)
        if text == v.text and mode == v.mode:
            return None
        return _make(v.definition, text, mode, True, v.idx, self.most)

    def _substituted(self, v: Value, refs: frozenset[str]) -> tuple[str, str]:
        """`v`'s text substituted, and evaluated where it is a script that can run now."""
        text = substitute(v.text, self._constants())
        if v.definition is ENVSTR:  # quote the exported values once they are known
            text = export_string(text)
        if _can_run(v.mode, text, refs, self.force):
            return self._evaluated(v, text)
        return text, v.mode

    def _evaluated(self, v: Value, text: str) -> tuple[str, str]:
        """A script's result as a text; one that fails in a forced pass stays as it is."""
        try:
            code = substitute(text, {}, final=True)
            return escape(_evaluate_in(self.values, v, code, v.mode, self.tags, self.most)), "text"
        except ExpandError:
            if not self.force:
                raise
            return text, v.mode

    def _track(self, name: str, new: Value) -> None:
        """The constants follow a changed value: a plain text is one, a template or script not."""
        if new.choices is None and new.mode not in SCRIPT_MODES:
            self._constants()[name] = new.text
        else:
            self._constants().pop(name, None)


def _refers_to_unsettled(refs: frozenset[str], values: dict[str, Value]) -> bool:
    """A reference to a value that is still a template or a script."""
    return any(
        r in values and (values[r].choices is not None or values[r].mode in SCRIPT_MODES)
        for r in refs
    )


def _can_run(mode: str, text: str, refs: frozenset[str], force: bool) -> bool:
    """A script runs once its placeholders are filled (or in a forced pass), never before its
    workpackage exists (jube_wp_*)."""
    return (
        mode in SCRIPT_MODES
        and (force or not has_placeholder(text))
        and not any(r.startswith("jube_wp_") for r in refs)
    )


def finalise(values: dict[str, Value], tags: Collection[str]) -> None:
    """The last pass when a workpackage is created: unescape `$$`, evaluate what is left, fix
    values."""
    settle(values, tags)
    for name, v in list(values.items()):
        final = _final(values, v, tags)
        if final is not None:
            values[name] = final


def _final(values: dict[str, Value], v: Value, tags: Collection[str]) -> Value | None:
    """`v` fixed: a template as it is, a text unescaped, a script evaluated; None where the final
    pass leaves it as it is (JUBE fixes only what the final pass changed; the rest stays
    substitutable)."""
    if v.fixed:
        return None
    if v.choices is not None:
        return replace(v, fixed=True)
    text, mode = _final_text(values, v, tags)
    if text == v.text and mode == v.mode:
        return None
    return Value(v.definition, text, mode, None, v.idx, True, True)


def _final_text(values: dict[str, Value], v: Value, tags: Collection[str]) -> tuple[str, str]:
    text = substitute(v.text, {}, final=True)
    if v.mode in SCRIPT_MODES:
        return _evaluate_in(values, v, text, v.mode, tags), "text"
    return text, v.mode


_PY_GLOBALS = {"__builtins__": builtins, "os": os, "re": re, "math": math}


def _evaluate_in(
    values: dict[str, Value],
    v: Value,
    code: str,
    mode: str,
    tags: Collection[str],
    most: int | None = None,
) -> str:
    """`evaluate` for one value of `values`; when it fails, hint a misspelt `$name` (did you
    mean)."""
    try:
        return evaluate(code, mode, v.definition, tags, most)
    except ExpandError as exc:
        hint = reference_hint(v.definition.value, mode, exc.message, values)
        if not hint:
            raise
        raise ExpandError(exc.message, exc.where, hint=hint) from None


def reference_hint(text: str, mode: str, message: str, known: Iterable[str]) -> str:
    """Why a script may have failed: a `$name` in `text` that is not a parameter, or (python) a bare
    name that looks like a parameter without its `$`. Shell variables pass through unless close to
    one."""
    names = set(known)
    return _unknown_reference(text, mode, names) or _bare_name(mode, message, names)


def _unknown_reference(text: str, mode: str, names: set[str]) -> str:
    """A `$name` of the script that is close to a parameter, or (python) any that is none."""
    for ref in sorted(references(text) - names):
        close = did_you_mean("$" + ref, ("$" + n for n in names), cutoff=0.75)
        if close:
            return f"'${ref}' is not a parameter; {close}"
        if mode == "python":
            return (
                f"'${ref}' is not a parameter here (not defined, or its tag does not hold), "
                "so it stays as written"
            )
    return ""


def _bare_name(mode: str, message: str, names: set[str]) -> str:
    """A python NameError for a name that is (close to) a parameter written without its `$`."""
    match = (
        re.search(r"NameError: name '(\w+)' is not defined", message) if mode == "python" else None
    )
    if not match:
        return ""
    close = _close_parameter(match.group(1), names)
    return f"'{match.group(1)}' is not a Python name; {close}" if close else ""


def evaluate(
    code: str, mode: str, param: Parameter, tags: Collection[str], most: int | None = None
) -> str:
    """Run a script parameter; errors name the parameter, its expression and its definition. A
    result of more than `most` values (None: any number) is refused as it is produced
    (TooManyValues)."""
    cap = None if most is None else Cap(param.separator, most)
    try:
        return run_script(code, mode, f"parameter '{param.name}'", param.where, tags, cap)
    except TooManyValues as exc:
        exc.name = param.name
        raise


def run_script(
    code: str,
    mode: str,
    what: str,
    where: Location,
    tags: Collection[str] = frozenset(),
    cap: Cap | None = None,
) -> str:
    """The text a `mode=` script gives (python, shell, perl, env, tag; any other mode: the code
    itself). `what` names its definition in errors ("parameter 'x'", "pattern 'y'"), `where` its
    line. TooManyValues when the result holds more values than `cap` allows."""
    if mode == "python":
        return _run_python(code, what, where, cap)
    if mode in ("shell", "perl"):
        return _run_shell(code, mode, what, where, cap)
    return _looked_up(code, mode, what, where, tags)


def _run_python(code: str, what: str, where: Location, cap: Cap | None) -> str:
    try:
        # S307: the file declared mode="python"
        result = str(eval(code, dict(_PY_GLOBALS)))  # noqa: S307
    except (Exception, SystemExit) as exc:  # any error in user code (even exit()) is reported
        raise ExpandError(
            f"{what}: python expression {code!r} failed: {type(exc).__name__}: {exc}",
            where,
            hint="check the expression after substitution of its $ references",
        ) from None
    if cap is not None and cap.over(result.count(cap.separator) + 1):
        raise TooManyValues(result.count(cap.separator) + 1)
    return result


def _run_shell(code: str, mode: str, what: str, where: Location, cap: Cap | None) -> str:
    """A shell command's output (perl: `perl -e "print CODE"`); it must exit 0."""
    shell = current().shell.strip() or "/bin/sh"
    cmd = code if mode == "shell" else f'perl -e "print {code}"'
    try:
        proc = _shell([shell, "-c", cmd], cap)
    except subprocess.TimeoutExpired:
        raise ExpandError(
            f"{what}: shell command {cmd!r} did not end within {SHELL_TIMEOUT} s", where
        ) from None
    if proc.returncode != 0:
        raise ExpandError(
            f"{what}: shell command {cmd!r} exited {proc.returncode}" + _error_output(proc),
            where,
            hint=f'a mode="{mode}" {what.split(" ")[0]}\'s command must exit 0; '
            "its output is the value",
        )
    return proc.stdout.decode(errors="ignore")


def _error_output(proc: subprocess.CompletedProcess[bytes]) -> str:
    err = proc.stderr.decode(errors="replace").strip()
    return f": {err}" if err else ""


def _close_parameter(bare: str, names: set[str]) -> str:
    """A parameter that a bare python name is, or is close to."""
    if bare in names:
        return f"did you mean '${bare}'?"
    return did_you_mean("$" + bare, ("$" + n for n in names), cutoff=0.75)


def _looked_up(code: str, mode: str, what: str, where: Location, tags: Collection[str]) -> str:
    """The modes that look a value up rather than run code: env (an environment variable), tag
    (the code where it names a tag given, else ''); any other mode is the code itself."""
    if mode == "env":
        if code not in os.environ:
            raise ExpandError(
                f"{what}: environment variable {code!r} is not set",
                where,
                hint=f"export {code} before running bench",
            )
        return os.environ[code]
    if mode == "tag":
        return code if code in tags else ""
    return code


def _shell(argv: list[str], cap: Cap | None) -> subprocess.CompletedProcess[bytes]:
    """Run a shell parameter's command, reading its output as it comes: past `cap`'s values it is
    killed (TooManyValues), past SHELL_TIMEOUT too (TimeoutExpired). Its error output goes to a
    file, so that a command writing much of it never blocks."""
    with (
        tempfile.TemporaryFile() as errors,
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors) as proc,
        selectors.DefaultSelector() as ready,
    ):
        assert proc.stdout is not None
        ready.register(proc.stdout, selectors.EVENT_READ)
        output = _read_output(proc, proc.stdout.fileno(), ready, cap)
        returncode = proc.wait()
        errors.seek(0)
        return subprocess.CompletedProcess(argv, returncode, output, errors.read())


def _read_output(
    proc: subprocess.Popen[bytes], fd: int, ready: selectors.BaseSelector, cap: Cap | None
) -> bytes:
    """The command's whole output; the command killed past `cap`'s values (TooManyValues)."""
    deadline = time.monotonic() + SHELL_TIMEOUT
    blocks: list[bytes] = []
    count = 1
    while block := _next_block(proc, fd, ready, deadline):
        blocks.append(block)
        count += _separators(block, cap)  # (one split across blocks is counted by _make)
        if cap is not None and cap.over(count):
            proc.kill()
            raise TooManyValues(count, stopped=True)
    return b"".join(blocks)


def _next_block(
    proc: subprocess.Popen[bytes], fd: int, ready: selectors.BaseSelector, deadline: float
) -> bytes:
    """The next block of output (b"": its end); the command killed past the deadline
    (TimeoutExpired)."""
    if not ready.select(max(deadline - time.monotonic(), 0)):
        proc.kill()
        raise subprocess.TimeoutExpired(proc.args, SHELL_TIMEOUT)
    return os.read(fd, READ_BLOCK)


def _separators(block: bytes, cap: Cap | None) -> int:
    """How many of the cap's separators a block of output holds (none without a cap)."""
    return block.count(cap.separator.encode()) if cap is not None and cap.separator else 0


def export_string(text: str) -> str:
    """Quote the values of `export NAME=value` lines as JUBE quotes them in `jube_wp_envstr`."""
    found = re.findall(r"^export (.+?)\s*=\s*?(.+?)?\s*?$", text, re.MULTILINE)
    return "".join(_export_line(name, (value or "").strip()) + "\n" for name, value in found)


def _export_line(name: str, value: str) -> str:
    """`export NAME="value"`: empty, already quoted, or quoted with its `"` escaped."""
    if not value:
        return f'export {name}=""'
    if value[0] == value[-1] and value[0] in "'\"" and len(value) > 1:
        return f"export {name}={value}"
    escaped = value.replace('"', '\\"')
    return f'export {name}="{escaped}"'
