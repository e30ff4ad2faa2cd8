"""Workpackages waiting for a done file: check their files, their job, their time limit.

JUBE keeps a workpackage pending for ever when its job dies before writing the done file. caramel
fails it when the run's time limit (`--timeout`) has passed, or when the backend reports its job
failed or gone (`Backend.job_states`, one query for all waiting jobs).
"""

from __future__ import annotations

import heapq
import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from caramel.engine.scheduler import Engine


def check(engine: Engine) -> bool:
    """Move on what can move; True when some workpackage changed (or may start now)."""
    now = time.time()
    waits = [wp for wp in engine.wps.values()
             if wp.state == "waiting" and wp.wait_kind == "file" and wp.id not in engine.resume]
    if not waits:
        return False
    jobs = [wp.job_id for wp in waits if wp.job_id]
    states = engine.backend.job_states(jobs) if jobs else {}
    timeout = engine.settings.timeout
    changed = False
    with engine.store.transaction():
        for wp in waits:
            files = wp.wait_files
            step = engine.bench.steps[wp.step]
            if files.get("error") and os.path.exists(files["error"]):
                engine.fail(wp, f"error file {files['error']} appeared")
            elif files.get("done") and os.path.exists(files["done"]):
                if files.get("break") and os.path.exists(files["break"]):
                    engine.mark_done(wp, [], engine.store.env(wp.id) if step.export else None)
                else:
                    engine.resume[wp.id] = (wp.cycle, wp.wait_op + 1)
                    heapq.heappush(engine.heap, wp.id)
            elif wp.job_id and wp.job_id in states and states[wp.job_id].state in ("failed", "gone"):
                job = states[wp.job_id]
                engine.fail(wp, f"job {wp.job_id} {job.state} without writing {files.get('done')}"
                                 + (f": {job.reason}" if job.reason else ""))
            elif timeout is not None and wp.wait_since is not None and now - wp.wait_since > timeout:
                engine.fail(wp, f"timed out: no done file {files.get('done')} after {timeout:g} s "
                                 f"(waiting since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(wp.wait_since))})")
            else:
                continue
            changed = True
    return changed
