"""A PostgreSQL server of the test session's own (Debian's postgresql 15), as the SLURM test
cluster is: made with initdb in a temporary folder, listening on a port and a unix socket of its
own, stopped at the end. PostgreSQL refuses to run as root: as root, it runs as `nobody`.

The superuser (trust, over the socket) makes databases; caramel connects over TCP as user
`caramel` with a password (scram), so a wrong password is a real refusal."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

BIN = Path("/usr/lib/postgresql/15/bin")
PASSWORD = "s3cret-pw"


def missing() -> str:
    """Why no server can be started here ("" when one can)."""
    for tool in ("initdb", "pg_ctl", "postgres"):
        if not (BIN / tool).exists():
            return f"PostgreSQL 15 is not installed ({BIN / tool} is absent: apt-get install postgresql-15)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'caramel[team]')"
    return ""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PgServer:
    def __init__(self) -> None:
        # not under pytest's root-only temporary folder: `nobody` must reach the data and socket
        self.base = Path(tempfile.mkdtemp(prefix="caramel-pg-"))
        self.data, self.sockets = self.base / "data", self.base / "run"
        self.sockets.mkdir()
        self.port = _free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            os.chmod(self.base, 0o755)
            shutil.chown(self.sockets, "nobody")
        self.databases = 0
        pwfile = self.base / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.as_root:
            shutil.chown(pwfile, "nobody")
            shutil.chown(self.base, "nobody")
        self._as_server([str(BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust",
                         "--auth-host=scram-sha-256", f"--pwfile={pwfile}", "-E", "UTF8", "--no-sync"])
        self.start()
        self.sql(f"CREATE ROLE caramel LOGIN PASSWORD '{PASSWORD}'")

    def _as_server(self, argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
        options = {"user": "nobody"} if self.as_root else {}
        return subprocess.run(argv, capture_output=True, text=True, check=check, cwd=self.base, timeout=120,
                              **options)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60"
        self._as_server([str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.base / "log"), "-o", options,
                         "-w", "-t", "60", "start"])

    def stop(self) -> None:
        self._as_server([str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"], check=False)

    def sql(self, statement: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(host=str(self.sockets), port=self.port, user="postgres", dbname=database,
                             autocommit=True) as db:
            db.execute(statement)

    def url(self, database: str, password: str = PASSWORD) -> str:
        return f"postgresql://caramel:{password}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database owned by caramel; returns its URL."""
        self.databases += 1
        name = f"history_{self.databases}_{int(time.time() * 1000) % 100000}"
        self.sql(f"CREATE DATABASE {name} OWNER caramel")
        return self.url(name)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)
