"""How a workpackage's commands run. One module per backend, registered by name (ReFrame-style):
adding SLURM later is a new `slurm.py` with `@register("slurm")`, nothing else changes.

    backend = get_backend("local")
"""

from __future__ import annotations

import importlib

from caramel.backends.base import Backend, JobState, Shell, register, registered
from caramel.errors import RunError

__all__ = ["Backend", "JobState", "Shell", "get_backend", "register", "registered"]


def get_backend(name: str = "local", **options) -> Backend:
    """An instance of the backend registered as `name` (its module is imported on first use)."""
    if name not in registered():
        try:
            importlib.import_module(f"caramel.backends.{name}")
        except ImportError:
            pass
    cls = registered().get(name)
    if cls is None:
        raise RunError(f"no backend named {name!r}", hint="backends: " + ", ".join(sorted(registered()) or ["local"]))
    return cls(**options)
