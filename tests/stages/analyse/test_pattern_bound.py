"""Patterns run under a time bound per file (issue 36): a pattern that backtracks without end on a
log line is stopped, named in a warning with its file and the bound, and its value is missing."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.run_bench import isolated_env
from tests.stages.analyse.test_scan import REGEXES, _text

from caramel.stages.analyse.patterns import compile_pattern
from caramel.stages.analyse.scan import matches
from caramel.stages.spec.model import NOWHERE

SLOW = """\
    name: slow
    outpath: bench_run
    patternset:
      name: pat
      pattern:
        - {name: nested, _: "(a+)+$"}
        - {name: alt, _: "(a|aa)+$"}
        - {name: n, type: int, _: "n=$jube_pat_int"}
    step: {name: run, do: "printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\\\\nn=3\\\\n'"}
    analyser: {name: a, use: pat, analyse: {step: run, file: stdout}}
    result: {use: a, table: {name: t, column: [n, nested, alt]}}
    """


def bench(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caramel", *args], capture_output=True, text=True, cwd=cwd,
                          env=isolated_env(cwd, **env), timeout=120)


def test_a_pathological_pattern_is_stopped_at_its_bound_and_named(tmp_path: Path) -> None:
    """docs/security.md, "Running a file you do not trust" (a file that passes --no-eval is still
    bounded) and docs/results.md, "Reading logs": `(a+)+$` on a 41-character line answers (with
    `re` it never returned); `(a|aa)+$` is stopped after `pattern_timeout` seconds with a warning naming the
    pattern, the file and the bound, and the row says why its value is missing."""
    (tmp_path / "slow.yaml").write_text(textwrap.dedent(SLOW))
    assert bench("run", "slow.yaml", "-q", cwd=tmp_path).returncode == 0
    started = time.perf_counter()
    result = bench("result", "-i", "last", "--no-eval", "--no-history", cwd=tmp_path,
                   CARAMEL_PATTERN_TIMEOUT="0.5")
    assert time.perf_counter() - started < 30
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == ["n,nested,alt,status",
                                              "3,,,done (missing alt: over 0.5 s on stdout)"]
    assert (f"warning: {tmp_path / 'slow.yaml'}:7: pattern 'alt' /(a|aa)+$/ did not finish within 0.5 s "
            "on stdout (pattern_timeout) in workpackage 0; its value is missing") in result.stderr


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(REGEXES))
def test_the_regex_module_finds_what_jubes_re_findall_finds(seed: int, case: tuple[str, int]) -> None:
    """docs/results.md, "Reading logs" (regex takes JUBE's pattern syntax as `re` does): the
    matches are JUBE's, Analyser._analyse_file in jube/analyser.py (FZJ-JSC/JUBE 29aaf67):
    `re.compile(pattern, re.MULTILINE [+ re.DOTALL])`, then `re.findall` flattened per group."""
    text, flags = _text(seed, 60), case[1]
    probe = compile_pattern(case[0], bool(flags & re.DOTALL), "pattern 'p'", NOWHERE)
    jube = re.compile(case[0], re.MULTILINE | flags)
    found = jube.findall(text)
    expected = [g for m in found for g in m] if jube.groups > 1 else found
    assert matches(probe, text) == expected


@pytest.mark.parametrize("size, factor", [(10, 1.0), (100, 1.0), (400, 4.0)])
def test_the_bound_grows_with_the_file(tmp_path, monkeypatch, size, factor) -> None:
    """docs/results.md, "Reading logs": `pattern_timeout` seconds per 64 MiB of the file, at least
    once: a big log's patterns get the time a sane pattern needs to read it."""
    from caramel.stages.analyse import scan

    seen: list[float | None] = []

    class Recorded(scan.Bound):
        def __init__(self, seconds: float | None) -> None:
            seen.append(seconds)
            super().__init__(seconds)

    monkeypatch.setattr(scan, "BOUND_SCALE", 100)
    monkeypatch.setattr(scan, "Bound", Recorded)
    log = tmp_path / "log"
    log.write_text("x" * size)
    scan.scan_file(str(log), [], lambda name, found: None, bound=0.5)
    scan.scan_file(str(log), [], lambda name, found: None, bound=None)
    assert seen == [pytest.approx(0.5 * factor), None]
