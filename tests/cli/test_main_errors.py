"""cli.main: the exit code an error's class carries; an OSError nothing wrapped is an `error:`
naming the path and the real cause (exit 2), never a traceback, never "?", never the current folder
blamed for it."""

from __future__ import annotations

import errno
import os
import signal
import sqlite3
from pathlib import Path

import pytest

from caramel.cli import dashboard
from caramel.cli.main import main
from caramel.errors import CaramelError, InternalError, Interrupted, Location, RunError, SpecError


@pytest.mark.parametrize(("code", "words"), [(errno.ENOENT, "no such file or folder"), (errno.EBUSY, "busy"),
                                            (errno.EMFILE, "too many open files"),
                                            (errno.ENOSPC, "no space left on the device")])
def test_an_unwrapped_oserror_names_its_cause_and_never_blames_the_current_folder(monkeypatch, capsys, tmp_path,
                                                                                  code, words):
    def fails(args):
        raise OSError(code, os.strerror(code))

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(dashboard, "run", fails)
    assert main(["dashboard", "-o", "x.html"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err and "?" not in err
    assert str(tmp_path) not in err and "Traceback" not in err


def test_an_oserror_with_a_path_names_it(monkeypatch, capsys):
    def fails(args):
        raise OSError(errno.EBUSY, "Device or resource busy", "/data/lustre/run/caramel.db")

    monkeypatch.setattr(dashboard, "run", fails)
    assert main(["dashboard", "-o", "x.html"]) == 2
    assert "cannot use /data/lustre/run/caramel.db: the file or device is busy" in capsys.readouterr().err


def test_a_full_disk_while_writing_an_output_keeps_the_old_one_and_names_it(monkeypatch, capsys, tmp_path: Path):
    page = tmp_path / "export.jsonl"
    page.write_text("old export\n")
    monkeypatch.setenv("CARAMEL_HISTORY", str(tmp_path / "history.db"))
    from caramel.consumers.history.store import History

    History.open().db.close()
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    monkeypatch.setattr(os, "fdopen", lambda *a, **k: Full(real_fdopen(*a, **k)))
    assert main(["export", "-o", str(page)]) == 2
    err = capsys.readouterr().err
    assert f"cannot write {page}: no space left on the device" in err and "?" not in err
    assert page.read_text() == "old export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.jsonl", "history.db"]


def _raising(exc: BaseException):
    """A command function that raises `exc` (monkeypatched into `bench dashboard`)."""
    def run(args):
        raise exc
    return run


@pytest.mark.parametrize(("exc", "code", "first_line"), [
    (SpecError("bad value", Location("b.yaml", 3)), 2, "error: b.yaml:3: bad value"),
    (RunError("no run here"), 2, "error: no run here"),
    (sqlite3.OperationalError("database is locked"), 2,
     "error: a database could not be used: database is locked"),
    (OSError(errno.EBADF, "Bad file descriptor"), 3,
     "internal error: OSError: [Errno 9] Bad file descriptor"),
    (ValueError("oops"), 3, "internal error: ValueError: oops"),
    (KeyboardInterrupt(), 130, "interrupted by SIGINT"),
    (Interrupted(signal.SIGTERM, "out/000001"), 143,
     "interrupted by SIGTERM: run out/000001 stopped, `bench continue out/000001` goes on"),
], ids=["spec", "run", "sqlite", "ebadf", "bug", "ctrl-c", "sigterm"])
def test_the_exit_codes_docs_cli_lists(monkeypatch, capsys, exc, code, first_line):
    """docs/cli.md: 2 for bad input and the disk's doing, 3 for a bug, 128 + the signal's number."""
    monkeypatch.setattr(dashboard, "run", _raising(exc))
    assert main(["dashboard", "-o", "x.html"]) == code
    assert capsys.readouterr().err.splitlines()[0] == first_line


def test_an_error_class_carries_its_exit_code(monkeypatch, capsys):
    """bench exits with the error's class attribute (as click's ClickException.exit_code,
    click/exceptions.py), so a new kind of error needs no change to cli/main.py."""
    class Refused(CaramelError):
        exit_code = 5
        label = "refused"

    monkeypatch.setattr(dashboard, "run", _raising(Refused("not today")))
    assert main(["dashboard", "-o", "x.html"]) == 5
    assert capsys.readouterr().err == "refused: not today\n"
    assert (CaramelError.exit_code, SpecError.exit_code, InternalError.exit_code) == (2, 2, 3)
    assert Interrupted(signal.SIGHUP).exit_code == 129
