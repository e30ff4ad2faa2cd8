"""A run folder's identity: what proves that a folder is a run caramel made, before anything deletes
it.

When a run is made, `.caramel_identity` is written beside its `caramel.db` (before the database
takes its name): the run id, the benchmark and the creation time, the same three the run record
holds. `proven(run_dir)` is the check `bench remove` makes: the folder's name is the run id, the
identity file is a regular file (no link) and agrees with the run record. A folder that merely holds
a file named `caramel.db` (empty, copied from another run, or copied into an outpath) is no run: it
is refused, naming what does not match. A run made by a caramel before identities (no file) is
proven by its folder name and its record alone.
"""

from __future__ import annotations

import os

from caramel.errors import CaramelError, RunError
from caramel.stages.expand import layout
from caramel.stages.state.identity_file import Identity, read, write
from caramel.stages.state.store import Store, db_path

__all__ = ["Identity", "is_proven", "proven", "read", "write"]


def proven(run_dir: str) -> Identity:
    """The identity of the run in `run_dir`, checked (see the module); RunError saying why not."""
    refuse = f"{run_dir} is not a run caramel made"
    if not os.path.isfile(db_path(run_dir)) or os.path.islink(db_path(run_dir)):
        raise RunError(f"{refuse}: it has no caramel.db")
    try:
        store = Store(db_path(run_dir), readonly=True)
        try:
            info = store.info()
        finally:
            store.close()
    except CaramelError as exc:
        raise RunError(
            f"{refuse}: its caramel.db is not a run record ({exc.message})",
            hint="nothing was removed; delete the folder yourself if you are sure",
        ) from None
    recorded = Identity(info.run_id, info.benchmark, info.created)
    name = os.path.basename(os.path.normpath(run_dir))
    if name != f"{info.run_id:06d}":
        raise RunError(
            f"{refuse}: its caramel.db is the record of run {info.run_id:06d} ({info.benchmark}), "
            f"not of a folder named {name!r} (a copied caramel.db?)",
            hint="nothing was removed; give the run folder itself, or the outpath with -i ID",
        )
    found = read(run_dir)
    if found is not None and found != recorded:
        raise RunError(
            f"{refuse}: its identity ({layout.IDENTITY_FILE}: run {found.run_id}, "
            f"{found.benchmark!r}, created {found.created}) does not match its caramel.db (run "
            f"{recorded.run_id}, {recorded.benchmark!r}, created {recorded.created})",
            hint="nothing was removed; one of the two was copied from another run",
        )
    return recorded


def created(run_dir: str) -> float | None:
    """When the run was made (its identity, else its record); None when neither can be read."""
    try:
        found = read(run_dir)
        if found is not None:
            return found.created
        return proven(run_dir).created
    except CaramelError:
        return None


def is_proven(run_dir: str) -> bool:
    try:
        proven(run_dir)
    except CaramelError:
        return False
    return True
