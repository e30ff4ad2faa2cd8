"""state.identity: what proves a folder is a run caramel made, before `bench remove` deletes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from caramel.errors import RunError
from caramel.stages.spec.model import Benchmark
from caramel.stages.state import identity
from caramel.stages.state.rows import RunInfo
from caramel.stages.state.store import Store


def make_run(outpath: Path, run_id: int = 3) -> Path:
    run_dir = outpath / f"{run_id:06d}"
    run_dir.mkdir(parents=True)
    info = RunInfo(run_id, "demo", "demo.xml", str(outpath), str(run_dir), created=1700000000.25)
    Store.create(str(run_dir), info, Benchmark("demo", "runs"), []).close()
    return run_dir


def test_a_run_made_by_caramel_is_proven(tmp_path):
    run_dir = make_run(tmp_path)
    assert identity.proven(str(run_dir)) == identity.Identity(3, "demo", 1700000000.25)


def test_an_identity_that_disagrees_with_the_record_is_refused(tmp_path):
    run_dir = make_run(tmp_path)
    (run_dir / ".caramel_identity").write_text(json.dumps({"run_id": 3, "benchmark": "other", "created": 1.0}))
    with pytest.raises(RunError, match="does not match its caramel.db"):
        identity.proven(str(run_dir))


def test_a_record_in_a_folder_not_named_after_its_run_is_refused(tmp_path):
    run_dir = make_run(tmp_path)
    copy = tmp_path / "bench_run"
    copy.mkdir()
    (copy / "caramel.db").write_bytes((run_dir / "caramel.db").read_bytes())
    with pytest.raises(RunError, match="not of a folder named 'bench_run'"):
        identity.proven(str(copy))


def test_a_run_without_identity_file_is_proven_by_its_name_and_record(tmp_path):
    run_dir = make_run(tmp_path)
    (run_dir / ".caramel_identity").unlink()  # made by a caramel before identities
    assert identity.proven(str(run_dir)).run_id == 3


def test_a_linked_identity_file_is_not_read(tmp_path):
    run_dir = make_run(tmp_path)
    target = tmp_path / "elsewhere.json"
    (run_dir / ".caramel_identity").rename(target)
    (run_dir / ".caramel_identity").symlink_to(target)
    with pytest.raises(RunError, match="is not a run identity"):
        identity.proven(str(run_dir))


def test_an_empty_caramel_db_is_no_run(tmp_path):
    folder = tmp_path / "000001"
    folder.mkdir()
    (folder / "caramel.db").write_bytes(b"")
    with pytest.raises(RunError, match="is not a run caramel made"):
        identity.proven(str(folder))
