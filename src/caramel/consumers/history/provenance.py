"""Where a run's figures come from: caramel version, git commit of the benchmark files, host and
nodes, job ids, container image and digest, energy method, start and end."""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

from caramel import __version__
from caramel.consumers.history.store import RunRecord
from caramel.stages.state.store import Store, db_path

if TYPE_CHECKING:
    from caramel.adapters.backends import Scheduler

# parameters that name a container image, in CARAML's files and caramel's
IMAGE_PARAMS = ("singularity_file", "apptainer_image", "container_image", "image")


def _git_commit(folder: str) -> str:
    import subprocess  # here: `bench result` on an unchanged run probes nothing

    try:
        done = subprocess.run(
            ["git", "-C", folder, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if done.returncode:
        return ""
    dirty = subprocess.run(
        ["git", "-C", folder, "status", "--porcelain", "--untracked-files=no", "--", "."],
        capture_output=True,
        text=True,
        timeout=10,
    ).stdout.strip()
    return done.stdout.strip() + ("-dirty" if dirty else "")


def _digest(path: str) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return "sha256:" + sha.hexdigest()


def _nodes(scheduler: Scheduler, job_ids: list[str]) -> str:
    """The node lists of the run's jobs, from its scheduler (one query), or this host."""
    if not job_ids:
        return os.uname().nodename
    states = scheduler.job_states(job_ids)
    nodes = sorted(
        {s.nodes for s in states.values() if s.nodes and s.nodes not in ("None assigned",)}
    )
    return ",".join(nodes)


def key(run_dir: str, created: float) -> str:
    """A run's key in the history: host, folder and start time (a folder reused later is another
    run)."""
    return f"{os.uname().nodename}:{os.path.abspath(run_dir)}:{created:.3f}"


def run_key(run_dir: str) -> str:
    store = Store(db_path(run_dir), readonly=True)
    try:
        return key(run_dir, store.info().created)
    finally:
        store.close()


def _image(store: Store) -> str:
    """The container image of the run ("": none): every workpackage of a containerised step names
    it, so a few suffice."""
    return next(
        (params[p] for params in store.first_params(100) for p in IMAGE_PARAMS if params.get(p)),
        "",
    )


def _container(image: str) -> str:
    """The run's container: its image, with its digest where the image is a file."""
    if not image:
        return ""
    return image + (f"@{_digest(image)}" if os.path.isfile(image) else "")


def run_record(run_dir: str, known: RunRecord | None = None) -> RunRecord:
    """The run's provenance as its record says now. `known`: the record the history keeps of this
    run: what was probed on this host when the run was first added (the benchmark files' git
    commit, a local run's fingerprint) is kept, not probed again days later on a host that may
    have changed since; what a run going on changes (jobs, nodes, end) is read anew."""
    # the schedulers and the probe are imported here: `bench result` on an unchanged run needs
    # only run_key
    from caramel.adapters import backends
    from caramel.consumers.history import fingerprint

    store = Store(db_path(run_dir), readonly=True)
    try:
        info = store.info()
        bench = store.model()
        found_ids, ended = store.jobs_and_end()
        image = _image(store)
    finally:
        store.close()
    job_ids = sorted(found_ids, key=lambda j: (len(j), j))
    scheduler = backends.for_run(info.settings).scheduler
    container = _container(image)
    system = bench.system
    host = os.uname().nodename
    return RunRecord(
        run_key=key(run_dir, info.created),
        benchmark=info.benchmark,
        file=info.file,
        run_dir=os.path.abspath(run_dir),
        tags=list(info.tags),
        system=system.name if system is not None else "",
        caramel_version=info.version or __version__,
        git_commit=known.git_commit if known is not None else _git_commit(info.home),
        host=host,
        nodes=_nodes(scheduler, job_ids),
        job_ids=job_ids,
        container=container,
        energy_method=(system.energy_method if system is not None else "") or "none",
        started=info.created,
        ended=ended,
        site=fingerprint.site_name(job_ids, scheduler.site),
        fingerprint=_fingerprint(run_dir, job_ids, known),
    )


def _fingerprint(run_dir: str, job_ids: list[str], known: RunRecord | None) -> dict[str, object]:
    """The nodes' fingerprint (as JSON values): a local run's as the history keeps it (the probe
    ran here when the run was first added), else from the run's probe files or a probe here."""
    from caramel.consumers.history import fingerprint

    if known is not None and known.fingerprint and not job_ids:
        return dict(known.fingerprint)
    return dict(fingerprint.from_run(run_dir, job_ids))
