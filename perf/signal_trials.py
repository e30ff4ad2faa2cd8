"""Seeded trials of SIGHUP, SIGKILL (then `bench continue`) and SIGTERM during a 100-workpackage
run.

    PYTHONPATH=src python3 perf/signal_trials.py                 # 50 trials per signal, seed 22
    PYTHONPATH=src python3 perf/signal_trials.py --trials 3 --json

Each trial runs a local benchmark of 100 workpackages (step `a`: 50, each with a fileset `prepare`
that exports a value and two do's, the first exporting a multi-line value holding `@caramel` lines;
step `b`: 50, depending on `a`, checking what `a` exported) with `procs` 1 or 4, sends the signal
at a random moment of the run, then runs `bench continue` to the end. Every do and prepare appends
`start KEY` and `end KEY` to a ledger outside its work folder; a command "ended exactly once" when
its `end` line is there once. Printed per signal: trials, trials where every do and prepare ended
exactly once, internal errors (a traceback or `internal error` from either command), workpackages
left `running` after the signal (SIGKILL leaves them by nature: it is counted after `continue`),
exit codes, and commands started again (killed before they ended, then run again: allowed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

WORKPACKAGES = 50  # per step: 100 in all

BENCHMARK = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="hundred" outpath="runs">
    <parameterset name="p"><parameter name="i" type="int">{values}</parameter></parameterset>
    <fileset name="f">
      <prepare>echo "start prepare $i" >> {ledger}; export PREP=$i; echo "end prepare $i" >>\
 {ledger}</prepare>
    </fileset>
    <step name="a" procs="{procs}" export="true">
      <use>p</use>
      <use>f</use>
      <do>echo "start a1 $i" >> {ledger}; sleep 0.01; export V="x
@caramel ENDENV
@caramel EXIT 3"; echo "end a1 $i" >> {ledger}</do>
      <do>echo "start a2 $i" >> {ledger}; sleep 0.0$$((i % 3)); [ "$$PREP" = "$i" ] || exit 7;\
 echo "end a2 $i" >> {ledger}</do>
    </step>
    <step name="b" procs="{procs}" depend="a">
      <do>echo "start b $i" >> {ledger}; case "$$V" in *"@caramel EXIT 3") ;; *) exit 8;; esac;\
 echo "end b $i" >> {ledger}</do>
    </step>
  </benchmark>
</jube>
"""

SIGNALS = {"SIGHUP": signal.SIGHUP, "SIGKILL": signal.SIGKILL, "SIGTERM": signal.SIGTERM}


def _bench(args: list[str], cwd: Path, env: dict[str, str], **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "caramel", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def _states(run_dir: Path) -> Counter:
    db = sqlite3.connect(run_dir / "caramel.db")
    try:
        return Counter(state for (state,) in db.execute("SELECT state FROM workpackages"))
    finally:
        db.close()


def _bad(err: str) -> bool:
    return "internal error" in err or "Traceback" in err


def trial(rng: random.Random, folder: Path, signum: int, env: dict[str, str]) -> dict:
    """One run signalled at a random moment, then continued; what happened."""
    folder.mkdir(parents=True)
    ledger = folder.parent / f"{folder.name}.ledger"  # outside the run and its work folders
    procs = rng.choice([1, 4])
    (folder / "h.xml").write_text(
        BENCHMARK.format(values=",".join(map(str, range(WORKPACKAGES))), procs=procs, ledger=ledger)
    )
    moment = rng.uniform(0.0, 1.0 if procs > 1 else 2.5)
    proc = _bench(["run", "-q", "h.xml"], folder, env, start_new_session=True)
    run_dir = folder / "runs" / "000000"
    while not (run_dir / "caramel.db").exists() and proc.poll() is None:
        time.sleep(0.005)
    time.sleep(moment)
    if proc.poll() is None:
        if signum == signal.SIGKILL:
            os.kill(proc.pid, signum)
        else:
            os.killpg(proc.pid, signum)  # as a terminal or a batch system does
    _out, err = proc.communicate(timeout=300)
    running_after_signal = _states(run_dir)["running"]
    cont = _bench(["continue", "-q", str(run_dir)], folder, env)
    _cout, cerr = cont.communicate(timeout=300)
    left = _states(run_dir)
    lines = ledger.read_text().splitlines() if ledger.exists() else []
    ends = Counter(line[4:] for line in lines if line.startswith("end "))
    expected = {f"{kind} {i}" for i in range(WORKPACKAGES) for kind in ("prepare", "a1", "a2", "b")}
    once = set(ends) == expected and all(n == 1 for n in ends.values())
    return {
        "rc": proc.returncode,
        "continue_rc": cont.returncode,
        "moment": round(moment, 3),
        "procs": procs,
        "exactly_once": once,
        "twice": sorted(k for k, n in ends.items() if n > 1),
        "missing": len(expected - set(ends)),
        "internal_errors": int(_bad(err)) + int(_bad(cerr)),
        "running_after_signal": running_after_signal,
        "running_after_continue": left["running"],
        "done_after_continue": left["done"],
        "restarted": sum(line.startswith("start ") for line in lines) - len(expected),
        "stderr": (err.strip().splitlines() or [""])[-1][:160],
    }


def run_trials(
    trials: int, seed: int, names: list[str], base: Path, env: dict[str, str]
) -> dict[str, dict]:
    summary: dict[str, dict] = {}
    for name in names:
        rng = random.Random(f"{seed}-{name}")
        results = []
        for n in range(trials):
            results.append(trial(rng, base / name / f"t{n}", SIGNALS[name], env))
            print(
                f"{name} trial {n}: {json.dumps(results[-1])}", file=sys.stderr, flush=True
            )  # progress
        summary[name] = {
            "trials": trials,
            "exactly_once": sum(r["exactly_once"] for r in results),
            "internal_errors": sum(r["internal_errors"] for r in results),
            "left_running_after_signal": sum(r["running_after_signal"] for r in results),
            "left_running_after_continue": sum(r["running_after_continue"] for r in results),
            "all_done_after_continue": sum(
                r["done_after_continue"] == 2 * WORKPACKAGES for r in results
            ),
            "exit_codes": dict(Counter(str(r["rc"]) for r in results)),
            "restarted_commands": sum(r["restarted"] for r in results),
            "failures": [
                r
                for r in results
                if not r["exactly_once"]
                or r["internal_errors"]
                or r["running_after_continue"]
                or r["done_after_continue"] != 2 * WORKPACKAGES
            ][:5],
        }
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=50, help="trials per signal (50)")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--signals", default="SIGHUP,SIGKILL,SIGTERM")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUBE_", "CARAMEL_"))}
    with tempfile.TemporaryDirectory(prefix="signal_trials_") as tmp:
        env.update(CARAMEL_DATA_DIR=str(Path(tmp) / "data"), CARAMEL_KILL_GRACE="5")
        summary = run_trials(args.trials, args.seed, args.signals.split(","), Path(tmp), env)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(
            f"{'signal':8} {'trials':>6} {'once':>5} {'internal':>8} {'running':>7} "
            f"{'running*':>8} {'restarted':>9}  exit codes"
        )
        for name, s in summary.items():
            print(
                f"{name:8} {s['trials']:6} {s['exactly_once']:5} {s['internal_errors']:8} "
                f"{s['left_running_after_signal']:7} {s['left_running_after_continue']:8} "
                f"{s['restarted_commands']:9}  {s['exit_codes']}"
            )
        print(
            "once: trials where every do and prepare ended exactly once; running: "
            "workpackages left running "
            "after the signal (SIGKILL: by nature), running*: after `bench continue`"
        )
    ok = all(
        s["exactly_once"] == s["trials"]
        and not s["internal_errors"]
        and not s["left_running_after_continue"]
        and s["all_done_after_continue"] == s["trials"]
        for s in summary.values()
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
