"""start_run: a run whose state could not be made leaves nothing; one stopped just after it was made stays."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from caramel.stages.engine import session
from caramel.stages.spec.loader import load_one
from caramel.stages.state.store import Store

BENCH = """<?xml version="1.0" encoding="UTF-8"?>
<jube>
  <benchmark name="two" outpath="runs">
    <parameterset name="p"><parameter name="i" type="int">1,2</parameter></parameterset>
    <step name="s"><use>p</use><do>echo $i > out.txt</do></step>
  </benchmark>
</jube>
"""


@pytest.fixture
def bench_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "b.xml").write_text(BENCH)
    return str(tmp_path / "b.xml")


def test_interrupted_just_after_the_run_was_made_keeps_it(bench_file: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C between caramel.db taking its name and bench starting the engine: the run stays and
    `continue` runs it (before, the folder and its complete state were deleted)."""
    real_create = Store.create

    def create_then_interrupted(*args, **kwargs):
        real_create(*args, **kwargs).close()
        raise KeyboardInterrupt

    monkeypatch.setattr(Store, "create", create_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        session.start_run(load_one(bench_file), quiet=True, cwd=str(tmp_path))
    run_dir = tmp_path / "runs" / "000000"
    assert (run_dir / "caramel.db").is_file()
    monkeypatch.setattr(Store, "create", real_create)
    summary = session.continue_run(str(run_dir), quiet=True)
    assert summary.exit_code == 0
    assert sorted(p.read_text() for p in run_dir.glob("*_s/work/out.txt")) == ["1\n", "2\n"]


def test_a_run_whose_state_was_not_made_leaves_no_folder(bench_file: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Store, "create", fails)
    with pytest.raises(OSError):
        session.start_run(load_one(bench_file), quiet=True, cwd=str(tmp_path))
    assert os.listdir(tmp_path / "runs") == []
