#!/usr/bin/env python3
"""Time and peak memory of the real `bench` refusing hostile files (issue 12).

    python perf/hostile_inputs.py [--values 100 --parameters 6]

Cases: a parameter space of PARAMETERS x VALUES (100^6 = 10^12 workpackages) for `bench plan`,
`bench run --dry-run` and `bench run`; a YAML file of nine levels of nine aliases; an XML
entity expansion bomb. Each line: the case, exit status, wall seconds, peak RSS of the bench
process (MB) and the first line of its error. Target: each refused within 1 s and 200 MB.

Issue 36 adds: one python and one shell parameter of 10^7 values (`bench plan`), and `bench
result --no-eval` of a run whose 41-character log line meets `(a+)+$` and `(a|aa)+$` (the
default pattern bound: 1 s per 64 MiB of log, CARAMEL_PATTERN_TIMEOUT). Target: each answered within
2 s and 100 MB.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time


def explosion(folder: str, parameters: int, values: int) -> str:
    path = os.path.join(folder, "explode.xml")
    params = "\n".join(
        f'      <parameter name="p{i}">{",".join(str(v) for v in range(values))}</parameter>'
        for i in range(parameters)
    )
    with open(path, "w") as handle:
        handle.write(f"""<jube><benchmark name="explode" outpath="run">
    <parameterset name="big">
{params}
    </parameterset>
    <step name="run"><use>big</use><do>echo $p0</do></step>
</benchmark></jube>
""")
    return path


def alias_bomb(folder: str) -> str:
    path = os.path.join(folder, "laughs.yaml")
    lines = [
        "name: laughs",
        "outpath: run",
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    ]
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    lines += ["step:", "  name: run", "  do: echo hi"]
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def entity_bomb(folder: str) -> str:
    path = os.path.join(folder, "lol.xml")
    decls = ['<!ENTITY l0 "lol">'] + [
        f'<!ENTITY l{i} "' + f"&l{i - 1};" * 10 + '">' for i in range(1, 10)
    ]
    with open(path, "w") as handle:
        handle.write(
            '<?xml version="1.0"?>\n<!DOCTYPE jube [\n' + "\n".join(decls) + "\n]>\n"
            '<jube><benchmark name="b" outpath="run"><step '
            'name="s"><do>&l9;</do></step></benchmark></jube>\n'
        )
    return path


def ten_million(folder: str, mode: str) -> str:
    """One parameter of 10^7 values made by a script (a cheap python expression: the cost measured
    is caramel's, not the expression's)."""
    path = os.path.join(folder, f"values_{mode}.xml")
    code = '"1," * (10**7 - 1) + "1"' if mode == "python" else "seq -s, 10000000"
    with open(path, "w") as handle:
        handle.write(f"""<jube><benchmark name="values" outpath="run">
  <parameterset name="p"><parameter name="n" mode="{mode}">{code}</parameter></parameterset>
  <step name="run"><use>p</use><do>echo $n</do></step>
</benchmark></jube>
""")
    return path


def backtracking(folder: str) -> str:
    """A run whose log has one line of 40 `a`s and a `!`, and patterns that backtrack on it; the
    run is made here (`bench run`), its result is what is measured."""
    path = os.path.join(folder, "backtrack.yaml")
    with open(path, "w") as handle:
        handle.write("""name: backtrack
outpath: run_backtrack
patternset:
  name: pat
  pattern:
    - {name: nested, _: "(a+)+$"}
    - {name: alt, _: "(a|aa)+$"}
step: {name: run, do: "printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\\n'"}
analyser: {name: a, use: pat, analyse: {step: run, file: stdout}}
result: {use: a, table: {name: t, column: [nested, alt]}}
""")
    subprocess.run(
        [sys.executable, "-m", "caramel", "run", path, "-q"],
        cwd=folder,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return path


def measure(label: str, args: list[str], cwd: str) -> None:
    """Run bench in a child that reports its own peak RSS (RUSAGE_CHILDREN would add up all
    runs)."""
    code = (
        "import resource, subprocess, sys, time; t = time.perf_counter(); "
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(p.returncode, time.perf_counter() - t, "
        "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024); print(p.stderr)"
    )
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code, sys.executable, "-m", "caramel", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout.splitlines()
    rc, seconds, rss = out[0].split()
    first = out[1] if len(out) > 1 else ""
    print(f"{label:<28} exit {rc}  {float(seconds):6.2f} s  {float(rss):6.1f} MB  {first[:150]}")
    assert time.perf_counter() - started < 120


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--values", type=int, default=100)
    parser.add_argument("--parameters", type=int, default=6)
    args = parser.parse_args()
    print(
        "peak RSS of this harness before: "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB"
    )
    with tempfile.TemporaryDirectory() as folder:
        env_note = f"{args.parameters} parameters x {args.values} values"
        big = explosion(folder, args.parameters, args.values)
        measure(f"plan ({env_note})", ["plan", big], folder)
        measure("run --dry-run", ["run", "--dry-run", big], folder)
        measure("run", ["run", big], folder)
        measure("yaml 9 levels of aliases", ["plan", alias_bomb(folder)], folder)
        measure("xml entity bomb", ["plan", entity_bomb(folder)], folder)
        measure("python parameter, 10^7", ["plan", ten_million(folder, "python")], folder)
        measure("shell parameter, 10^7", ["plan", ten_million(folder, "shell")], folder)
        backtracking(folder)
        measure(
            "(a+)+$, (a|aa)+$ on 41 chars",
            ["result", "-i", "0", "--no-eval", "--no-history", "run_backtrack"],
            folder,
        )


if __name__ == "__main__":
    main()
