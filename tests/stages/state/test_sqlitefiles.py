"""state.sqlitefiles, the one module that opens SQLite files: a path is a path (quoted into its
`file:` URI), a read-only open reads that very file and makes none, and no other module calls
sqlite3.connect."""

from __future__ import annotations

import ast
import contextlib
import os
import sqlite3
from pathlib import Path

import pytest
from tests.test_layers import module_name, source_root

from caramel.stages.state import sqlitefiles
from caramel.stages.state.dbfile import StorageError

KIND = sqlitefiles.FileKind("test file", timeout_s=1)


def make(path: Path, value: str) -> None:
    """A file holding `value`, written through a plain path (no URI to misread)."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE t (v TEXT)")
        db.execute("INSERT INTO t VALUES (?)", (value,))


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# A folder name, and where the unquoted URI `file:<tmp>/<name>/x.db?mode=ro` led SQLite instead: up
# to a `#` (a fragment) or a `?` (a query, whose `mode=ro` is then lost: the file was made), `%HH`
# decoded
@pytest.mark.parametrize(("name", "decoy"), [("a#b", "a"), ("a?b", "a"), ("a%41b", "aAb/x.db"),
                                             ("a%2fb", "a/b/x.db"), ("a#b%41?c d'é", "a"),
                                             ("n\nl\"'#?%.é", "n\nl\"'")])
def test_a_read_only_open_reads_the_file_its_path_names(tmp_path: Path, name: str,
                                                        decoy: str) -> None:
    """Issue 35: a decoy stands where the old URI led, and the open must read the right file and
    make none."""
    folder = tmp_path / name
    folder.mkdir()
    make(folder / "x.db", "right")
    (tmp_path / decoy).parent.mkdir(parents=True, exist_ok=True)
    make(tmp_path / decoy, "decoy")
    before = listing(tmp_path)
    db = sqlitefiles.open_connection(str(folder / "x.db"), KIND, readonly=True)
    try:
        assert db.execute("SELECT v FROM t").fetchall() == [("right",)]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            db.execute("INSERT INTO t VALUES ('written')")
    finally:
        db.close()
    guarded = sqlitefiles.connect(str(folder / "x.db"), KIND, readonly=True)
    assert guarded.execute("SELECT v FROM t").fetchall() == [("right",)]
    guarded.close()
    assert listing(tmp_path) == before


def test_a_relative_path_is_read_from_the_current_folder(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "c#d").mkdir()
    make(tmp_path / "c#d" / "x.db", "right")
    monkeypatch.chdir(tmp_path)
    db = sqlitefiles.open_connection(os.path.join("c#d", "x.db"), KIND, readonly=True)
    assert db.execute("SELECT v FROM t").fetchall() == [("right",)]
    db.close()


def test_a_write_makes_the_file_its_path_names_and_nothing_else(tmp_path: Path) -> None:
    folder = tmp_path / "a#b%41?c d'é"
    folder.mkdir()
    db = sqlitefiles.connect(str(folder / "new#%41?.db"), KIND)
    with db:
        db.execute("CREATE TABLE t (v TEXT)")
    db.close()
    assert listing(tmp_path) == [folder.name, f"{folder.name}/new#%41?.db"]


def test_a_name_that_is_no_utf_8_is_opened(tmp_path: Path) -> None:
    """Bytes the OS allows in a name and UTF-8 does not (Python keeps them as surrogates) are
    quoted as the bytes they are."""
    name = os.fsdecode(b"x\xff#y.db")
    try:
        make(tmp_path / name, "right")
    except (sqlite3.Error, UnicodeEncodeError, OSError):
        pytest.skip("this filesystem or sqlite3 takes no such name")
    assert sqlitefiles.uri(str(tmp_path / name), readonly=True).endswith("/x%FF%23y.db?mode=ro")
    db = sqlitefiles.open_connection(str(tmp_path / name), KIND, readonly=True)
    assert db.execute("SELECT v FROM t").fetchall() == [("right",)]
    db.close()


def test_a_missing_file_opened_read_only_is_an_error_naming_it_and_not_made(tmp_path: Path) -> None:
    missing = tmp_path / "a#b" / "x.db"
    missing.parent.mkdir()
    with pytest.raises(StorageError, match="test file") as caught:
        sqlitefiles.connect(str(missing), KIND, readonly=True)
    assert str(missing) in str(caught.value)
    assert listing(tmp_path) == ["a#b"]


def test_the_kind_sets_the_lock_wait_and_the_transactions(tmp_path: Path) -> None:
    kind = sqlitefiles.FileKind("test file", timeout_s=2.5, autocommit=True)
    db = sqlitefiles.open_connection(str(tmp_path / "x.db"), kind)
    assert db.execute("PRAGMA busy_timeout").fetchone() == (2500,) and db.isolation_level is None
    db.close()
    db = sqlitefiles.open_connection(str(tmp_path / "x.db"), KIND, timeout_s=0.5)
    assert db.execute("PRAGMA busy_timeout").fetchone() == (500,)
    assert db.isolation_level == "DEFERRED"
    db.close()


def sqlite_openers(root: Path) -> list[str]:
    """The modules under `root` that name sqlite3.connect (a call, a reference, an import)."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            named = (isinstance(node, ast.Attribute) and node.attr == "connect"
                     and isinstance(node.value, ast.Name) and node.value.id == "sqlite3")
            imported = isinstance(node, ast.ImportFrom) and node.module == "sqlite3" \
                and any(alias.name in ("connect", "*") for alias in node.names)
            if named or imported:
                found.add(module_name(root, path))
    return sorted(found)


def test_one_module_of_caramel_opens_sqlite_files() -> None:
    assert sqlite_openers(source_root()) == ["caramel.stages.state.sqlitefiles"]


def test_a_second_opener_is_found(tmp_path: Path) -> None:
    package = tmp_path / "caramel"
    package.mkdir()
    (package / "one.py").write_text("import sqlite3\ndb = sqlite3.connect('x')\n")
    (package / "two.py").write_text("from sqlite3 import connect as c\n")
    (package / "three.py").write_text("import sqlite3\nopen_it = sqlite3.connect\n")
    (package / "four.py").write_text("import sqlite3\n# sqlite3.connect(x) in a comment\n")
    assert sqlite_openers(package) == ["caramel.one", "caramel.three", "caramel.two"]


def test_an_immutable_open_is_read_only_only(tmp_path: Path) -> None:
    path = str(tmp_path / "a#b.db")
    immutable = sqlitefiles.uri(path, readonly=True, immutable=True)
    assert immutable.endswith("/a%23b.db?mode=ro&immutable=1")
    assert sqlitefiles.uri(path, immutable=True).endswith("/a%23b.db?mode=rwc")


def test_leaving_wal_folds_the_log_in_unless_another_connection_reads(tmp_path: Path) -> None:
    path = tmp_path / "w.db"
    make(path, "kept")
    wal = sqlite3.connect(path, isolation_level=None)
    wal.execute("PRAGMA journal_mode=WAL")
    wal.execute("INSERT INTO t VALUES ('logged')")
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT * FROM t").fetchall()  # a snapshot held: the file may not leave WAL
    assert not sqlitefiles.leave_wal(wal)
    reader.execute("COMMIT")
    reader.close()
    assert sqlitefiles.leave_wal(wal)
    wal.close()
    assert path.read_bytes()[18:20] == b"\x01\x01" and not os.path.exists(f"{path}-wal")
    db = sqlitefiles.open_connection(str(path), KIND, readonly=True)
    assert db.execute("SELECT v FROM t").fetchall() == [("kept",), ("logged",)]
    db.close()
