"""Where caramel's shipped folders are: `benchmarks/`, `systems/`, `templates/`, `containers/`.

The repository keeps them at its top level; the wheel carries copies in `caramel/_shipped/`
(setup.py maps them there at build time). A checkout (or an editable install) finds the top-level
folders, an installed wheel its own copies. Nothing here writes into either.
"""

from __future__ import annotations

import functools
from pathlib import Path

SHIPPED_FOLDERS = ("benchmarks", "systems", "templates", "containers")
_PACKAGE = Path(__file__).resolve().parent


def shipped(folder: str) -> Path:
    """The shipped folder `folder` (one of SHIPPED_FOLDERS); `$CARAMEL_TEMPLATES` overrides
    templates/."""
    if folder not in SHIPPED_FOLDERS:
        raise ValueError(f"not a shipped folder: {folder!r}")
    if folder == "templates":
        from caramel.settings import current

        if current().templates:
            return Path(current().templates)
    return _located(folder)


@functools.cache
def _located(folder: str) -> Path:
    """Where the package's copy or the checkout's folder is: found once a process (a thousand job
    scripts asked for templates/ a thousand times, 0.45 s of stat calls)."""
    packaged = _PACKAGE / "_shipped" / folder
    if packaged.is_dir():
        return packaged
    for parent in _PACKAGE.parents:  # src/caramel -> src -> the checkout
        if (parent / "templates" / "platform").is_dir():
            return parent / folder
    return packaged
