"""The identity file of a run folder (`.caramel_identity`): the run id, the benchmark and the
creation time, as JSON. Written by `Store.create` before the record takes its name; `state.identity`
proves a run with it (apart from the proof, which opens the record, so the store and the proof do
not import each other).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from caramel.errors import RunError
from caramel.fs.writes import write_text
from caramel.stages.expand import layout

MAX_BYTES = 4096  # an identity is three values: a bigger file is not one


@dataclass(frozen=True)
class Identity:
    run_id: int
    benchmark: str
    created: float

    def to_text(self) -> str:
        return (
            json.dumps(
                {"run_id": self.run_id, "benchmark": self.benchmark, "created": self.created}
            )
            + "\n"
        )


def write(run_dir: str, identity: Identity) -> None:
    write_text(layout.identity_file(run_dir), identity.to_text(), root=run_dir)


def read(run_dir: str) -> Identity | None:
    """The identity file of `run_dir`, None when there is none; RunError when it is not one."""
    path = layout.identity_file(run_dir)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RunError(f"{path} is not a run identity: {exc.strerror}") from None
    try:
        data = os.read(fd, MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        if len(data) > MAX_BYTES:
            raise ValueError("too large")
        doc = json.loads(data)
        return Identity(int(doc["run_id"]), str(doc["benchmark"]), float(doc["created"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise RunError(f"{path} is not a run identity ({exc})") from None
