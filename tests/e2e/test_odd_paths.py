"""Every documented command that takes a run folder, a run id or a history (docs/cli.md) works where
their paths hold `#`, `?`, `%`, spaces, quotes, newlines and non-ASCII, and creates nothing outside
them (issue 35: a read-only open of `file:{path}?mode=ro` cut the path at `#`, so `bench status`
called the run state foreign and SQLite made an empty file `a` beside the run's folder).

One run per folder name, shared by the commands (a module-scoped fixture). Everything lives in the
odd folder: the benchmark file and the folder bench is called from, the outpath (so the run folder
is `<odd>/000000`), bench's data folder (run registry) and the history (`$CARAMEL_HISTORY`, an odd
name too). After each command the folder above holds only the odd folder, and the odd folder only
what the command was asked to write.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.e2e.tiny import TINY
from tests.run_bench import bench, isolated_env

# The folder name, and one with a newline, a double quote and a `%` that decodes to text
NAMES = ["a#b%41?c d'é", "n\nl\"#%2e%41?x é"]
HISTORY_NAME = "h#i%41?j d'é.db"



@dataclass
class Site:
    root: Path  # the folder above: it must never gain anything
    odd: Path  # the odd folder: the benchmark, the outpath, the data folder, the history
    env: dict[str, str]
    made: set[str]  # what the odd folder holds after the run and its result

    @property
    def run_dir(self) -> Path:
        return self.odd / "000000"

    @property
    def history(self) -> Path:
        return self.odd / HISTORY_NAME

    def bench(self, *args: str) -> tuple[int, str]:
        done = bench(*args, cwd=self.odd, env=self.env, timeout=120)
        return done.returncode, done.stdout + done.stderr

    def ok(self, *args: str, wrote: tuple[str, ...] = ()) -> str:
        """Run bench with `args`: it exits 0, the folder above gains nothing, and the odd folder
        only the files `wrote` names."""
        code, out = self.bench(*args)
        assert code == 0, out
        assert os.listdir(self.root) == [self.odd.name]
        assert set(os.listdir(self.odd)) - self.made <= set(wrote), out
        self.made |= set(wrote)
        assert "Traceback" not in out
        return out


@pytest.fixture(scope="module", params=NAMES, ids=["issue-name", "newline-quote"])
def site(request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("odd")
    odd = root / request.param
    odd.mkdir()
    (odd / "tiny.xml").write_text(TINY)
    env = isolated_env(odd, CARAMEL_HISTORY=str(odd / HISTORY_NAME))  # data folder: <odd>/data
    made = {"tiny.xml"}
    here = Site(root, odd, env, made)
    here.ok("run", "tiny.xml", "-o", str(odd), "-q", wrote=("000000", "data"))
    here.ok("result", "-i", "last", wrote=(HISTORY_NAME,))
    yield here


@pytest.mark.slow
def test_run(site: Site) -> None:
    assert (site.run_dir / "caramel.db").is_file() and (site.run_dir / ".caramel_ended").is_file()
    assert sorted(os.listdir(site.odd / "data")) == ["runs.db"]


def test_continue(site: Site) -> None:
    assert "2 done" in site.ok("continue", "-i", "last")
    assert "2 done" in site.ok("continue", str(site.run_dir))


def test_cancel(site: Site) -> None:
    assert "no job to cancel" in site.ok("cancel", str(site.odd), "-i", "last")


def test_status(site: Site) -> None:
    for where in (("-i", "last"), (str(site.run_dir),), (str(site.odd), "-i", "0")):
        out = site.ok("status", *where)
        assert "is not a caramel run state" not in out and "work    2" in out
    assert json.loads(site.ok("status", "-i", "last", "--format", "json"))


def test_log(site: Site) -> None:
    assert site.ok("log", "-i", "last").count("exit 0") == 2


def test_info(site: Site) -> None:
    assert "tiny" in site.ok("info", str(site.run_dir))


def test_result_and_analyse(site: Site) -> None:
    assert site.ok("result", str(site.run_dir)).startswith("n,rate[items/s]\n1,1.0\n2,2.0")
    site.ok("analyse", "-i", "last")
    assert sorted(os.listdir(site.run_dir / "result")) == ["d.dat", "t.dat"]
    # JUBE's rows (jube/result_types/database.py, DatabaseData.create_result: REPLACE INTO the table
    # named after the database, values typed as the first row's)
    with contextlib.closing(sqlite3.connect(site.run_dir / "result" / "d.dat")) as db:
        assert db.execute('SELECT * FROM "d" ORDER BY n').fetchall() == [(1, 1.0), (2, 2.0)]


def test_history_list(site: Site) -> None:
    assert "tiny" in site.ok("history", "list") and "2 figure(s)" in site.ok("history", "list")


@pytest.mark.slow
def test_compare_and_baseline(site: Site) -> None:
    assert "within noise" in site.ok("compare", "-i", "last", "--baseline", "0")
    site.ok("baseline", "set", "base", "-i", "last")
    assert "within noise" in site.ok("compare", "-i", "last", "--baseline", "base",
                                     "--history", str(site.history))


@pytest.mark.slow
def test_report(site: Site) -> None:
    page = "r#%41?.html"
    site.ok("report", "-i", "last", "-o", str(site.odd / page), wrote=(page,))
    assert (site.odd / page).stat().st_size > 1000


@pytest.mark.slow
def test_dashboard(site: Site) -> None:
    page = "d#%41? é.html"
    site.ok("dashboard", "-o", str(site.odd / page), wrote=(page,))
    assert (site.odd / page).stat().st_size > 1000


def test_export_and_import(site: Site) -> None:
    lines, other = "e#%41?.jsonl", "o#%41? é.db"
    site.ok("export", "-o", str(site.odd / lines), wrote=(lines,))
    assert len((site.odd / lines).read_text().splitlines()) == 1
    assert site.ok("import", str(site.odd / lines), "--history", str(site.odd / other),
                   wrote=(other,)).startswith("1 new run(s)")
    assert "tiny" in site.ok("history", "list", "--history", str(site.odd / other))


@pytest.mark.slow
def test_history_copy_remove_push(site: Site) -> None:
    copy = "c#%41?'.db"
    copied = site.ok("history", "copy", str(site.history), str(site.odd / copy), wrote=(copy,))
    assert "1 new run(s)" in copied
    with contextlib.closing(sqlite3.connect(site.odd / copy)) as db:  # a plain path: no URI to read
        (key,) = db.execute("SELECT run_key FROM runs").fetchone()
    site.ok("history", "remove", "--history", str(site.odd / copy), key)
    assert "no runs" in site.ok("history", "list", "--history", str(site.odd / copy))
    assert "nothing to push" in site.ok("history", "push")


@pytest.mark.slow
def test_predict_and_plan(site: Site) -> None:
    assert "2 workpackages predicted" in site.ok("predict", "tiny.xml")
    planned = site.ok("plan", "tiny.xml", "--predict", "--history", str(site.history))
    assert "predicted cost" in planned


@pytest.mark.slow
def test_a_campaign(site: Site) -> None:
    """The campaign list in the odd data folder: a suite's campaign, then `-c last`."""
    zoo = site.odd / "zoo#%41?"
    zoo.mkdir()
    site.made.add(zoo.name)
    (zoo / "mad.yaml").write_text("name: mad\noutpath: mad_runs\nmeta: {tags: [smoke]}\n"
                                  "step:\n  name: run\n"
                                  "  do: 'echo \"performance: 3.5 examples/sec\"'\n")
    out = site.ok("run", "--suite", "smoke", "--benchmarks", str(zoo), "--tag", "local", "-q",
                  wrote=("mad_runs",))
    assert "campaign" in out
    assert "mad_runs/000000" in site.ok("status", "-c", "last")
    assert "3.5" in site.ok("result", "-c", "last", wrote=("perf.csv",))  # perf.csv: MAD's, in cwd


def test_output_and_comment(site: Site) -> None:
    assert "stdout" in site.ok("output", "-i", "last")
    site.ok("comment", "a comment #%41?", "-i", "last")
    assert "a comment #%41?" in site.ok("info", "-i", "last")


def test_history_changes(site: Site) -> None:
    out = site.ok("history", "changes")
    assert "no change point" in out and "too few runs" in out


def test_remove(site: Site) -> None:
    """Last: the run goes, and nothing else."""
    site.ok("remove", "-f", str(site.run_dir))
    assert not site.run_dir.exists()
    site.made.discard("000000")
    assert set(os.listdir(site.odd)) == site.made

