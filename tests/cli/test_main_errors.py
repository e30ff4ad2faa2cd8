"""cli.main: an OSError nothing wrapped is an `error:` naming the path and the real cause (exit 2),
never a traceback, never "?", never the current folder blamed for it."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from caramel.cli import dashboard
from caramel.cli.main import main


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
