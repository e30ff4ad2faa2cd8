"""Build hook: the repository's top-level shipped folders go into the package as `caramel/_shipped/`.

The repository keeps `benchmarks/`, `systems/`, `templates/` and `containers/` at its top level (the
layout users read); the wheel needs them inside the package. Only the files caramel reads are
copied (benchmark and system files, templates, container definitions), never what a run left
beside them (`*_run/` folders, data, images). An editable install reads the top-level folders.
"""

from __future__ import annotations

import fnmatch
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

# folder -> (patterns of the files to ship, whether subfolders are shipped)
SHIPPED = {
    "benchmarks": (("*.yaml", "*.yml", "*.xml", "*.md"), False),
    "systems": (("*.yaml", "*.md"), False),
    "templates": (("*",), True),
    "containers": (("*.def", "*.md"), False),
}


def shipped_files(folder: str) -> list[str]:
    patterns, recurse = SHIPPED[folder]
    out = []
    for root, dirs, files in os.walk(folder):
        if not recurse:
            dirs.clear()
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        out += [os.path.join(root, f) for f in sorted(files) if any(fnmatch.fnmatch(f, p) for p in patterns)]
    return out


class BuildWithShipped(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install finds the checkout's own folders
        for folder in SHIPPED:
            for path in shipped_files(folder):
                target = os.path.join(self.build_lib, "caramel", "_shipped", path)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy2(path, target)


setup(cmdclass={"build_py": BuildWithShipped})
