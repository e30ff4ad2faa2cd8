"""Systems: one YAML file per system tag (`systems/A100.yaml`), what a site is and how to use it.

    system = find_system({"800M", "A100"})        # the tag that names a system, or None
    bench = with_system(bench, system)              # its `system` parameterset, its scheduler

Search order: `--systems DIR` (repeatable), `$CARAMEL_SYSTEMS_PATH` (colon-separated), then the
`systems/` folder shipped with caramel. The first file named after a tag wins, so a site can
override a shipped system by adding its own folder.
"""

from caramel.systems.loader import find_system, load_system, search_path, system_names
from caramel.systems.model import System, with_system

__all__ = ["System", "find_system", "load_system", "search_path", "system_names", "with_system"]
