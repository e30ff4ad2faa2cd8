"""Layers that only point down: every import inside src/caramel goes to the same layer or a lower one,
no two packages import each other, and no two modules import each other at any depth (a cycle of
modules, however long, through imports at the top or inside functions).

The imports are read with Python's `ast` (at any depth: inside functions and `if TYPE_CHECKING:` blocks
too; relative imports resolved), so an import hidden in a function body counts like one at the top.
`CARAMEL_LAYERS_ROOT` points the test at another tree's `src/caramel` (to show it failing on an old one).
docs/architecture.md explains the order.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import caramel

# Low to high (docs/architecture.md says why); a module may import from its own rank or a lower one. The
# rank of a module is the rank of its package (first name under caramel) or of the top-level module itself.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "vocabulary", "resources", "__version__", "fs", "redact", "settings"),
    ("spec",),
    ("expand",),
    ("backends",),  # schedulers and launchers by name: system files are checked against them
    ("systems", "containers", "energy", "payloads"),  # facts about the site a run is planned for; what runs in a job
    ("state",),
    ("engine",),
    ("analyse",),
    ("history",),  # what runs measured, kept across runs (docs/architecture.md: why below report)
    ("report",),
    ("pages", "predict", "catalog", "mlperf"),
    ("api", "sweep", "cli", "__main__", "__init__"),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}

# Modules of caramel.adapters.backends that other packages may import: the interface and the registries. A
# concrete scheduler or launcher (slurm, local shell...) is reached by name through a registry, never
# imported outside backends/, so a new scheduler is one module there and nothing else changes.
BACKEND_INTERFACE = ("base", "registry", "schedulers", "launchers")


def source_root() -> Path:
    return Path(os.environ.get("CARAMEL_LAYERS_ROOT") or Path(caramel.__file__).parent)


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(["caramel", *parts])


def is_module(root: Path, module: str) -> bool:
    path = root.joinpath(*module.split(".")[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def is_type_checking(test: ast.expr) -> bool:
    """`if TYPE_CHECKING:` or `if typing.TYPE_CHECKING:`."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
            or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def type_only(tree: ast.Module) -> set[int]:
    """The ids of the import nodes inside `if TYPE_CHECKING:` blocks (never run: no import order)."""
    return {id(node) for block in ast.walk(tree) if isinstance(block, ast.If) and is_type_checking(block.test)
            for statement in block.body for node in ast.walk(statement)}


def imported_modules(root: Path, path: Path, run_time_only: bool = False) -> list[tuple[int, str]]:
    """(line, caramel module) for every import of caramel in one file, at any depth (`run_time_only`:
    but those in `if TYPE_CHECKING:` blocks)."""
    name = module_name(root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    tree = ast.parse(path.read_text(), str(path))
    skipped = type_only(tree) if run_time_only else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from caramel.stages.spec import model` imports a module when there is one by that name
            # (and `from caramel import __version__` a name with a layer of its own)
            out += [(node.lineno, f"{target}.{alias.name}"
                     if target == "caramel" or is_module(root, f"{target}.{alias.name}") else target)
                    for alias in node.names]
    return [(line, target) for line, target in out if target == "caramel" or target.startswith("caramel.")]


# The folders that group packages by kind (docs/architecture.md, "Four kinds of code"); `payloads` is
# one unit: everything in it runs inside jobs.
GROUPS = {"stages": "stage", "adapters": "adapter", "consumers": "consumer"}


def unit_parts(module: str) -> list[str]:
    """The module's name from its unit on: `caramel.stages.engine.runner` → ['engine', 'runner']."""
    parts = module.split(".")[1:]
    return parts[1:] if len(parts) > 1 and parts[0] in GROUPS else parts


def unit(module: str) -> str:
    """The layer unit of a module: its package under caramel (under its kind's folder), or the top-level
    module's name. `caramel.__version__` is a base fact that lives in caramel/__init__.py because packaging
    reads it there; a kind's folder itself (`caramel.stages`) holds nothing and ranks as an entry."""
    parts = unit_parts(module)
    return parts[0] if parts and parts[0] not in GROUPS else "__init__"


def all_edges(root: Path, run_time_only: bool = False) -> list[tuple[str, int, str]]:
    """(importing module:line, line, imported module) for every caramel import under root."""
    edges = []
    for path in sorted(root.rglob("*.py")):
        source = module_name(root, path)
        for line, target in imported_modules(root, path, run_time_only):
            edges.append((f"{source}:{line}", line, target))
    return edges


def rank_of(module: str) -> int:
    name = unit(module)
    if name not in RANK:
        pytest.fail(f"{module}: package {name!r} has no layer in tests/test_layers.py (add it, and to "
                    "docs/architecture.md)")
    return RANK[name]


def is_backend_interface(module: str) -> bool:
    parts = unit_parts(module)  # ['backends', ...]
    return len(parts) <= 1 or parts[1] in BACKEND_INTERFACE and (len(parts) == 2 or parts[-1] in BACKEND_INTERFACE)


def layer_problems(root: Path) -> list[tuple[str, str, str]]:
    """(importing module, imported module, what is wrong) for every import against the layers."""
    problems = []
    edges = all_edges(root)
    for where, _, target in edges:
        source = where.partition(":")[0]
        if rank_of(target) > rank_of(source):
            problems.append((source, target, f"{where} imports {target}: layer {unit(source)!r} is below "
                                             f"{unit(target)!r}"))
        elif unit(target) == "backends" != unit(source) and not is_backend_interface(target):
            problems.append((source, target, f"{where} imports {target}: outside backends/, only its interface "
                                             f"({', '.join(BACKEND_INTERFACE)}) is imported"))
    between: dict[tuple[str, str], tuple[str, str, str]] = {}
    for where, _, target in edges:
        source = where.partition(":")[0]
        if unit(source) != unit(target):
            between.setdefault((unit(source), unit(target)), (source, target, f"{where} imports {target}"))
    for (a, b), first in sorted(between.items()):
        if a < b and (b, a) in between:
            problems.append((first[0], first[1], f"packages {a!r} and {b!r} import each other: {first[2]}; "
                                                 f"{between[(b, a)][2]}"))
    return problems


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of `graph` with more than one module or a self-import:
    each is a set of modules that import each other, directly or round a longer cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def import_cycles(root: Path) -> list[str]:
    """One message per cycle of modules importing each other, naming every import of the cycle with its
    line. Imports in `if TYPE_CHECKING:` blocks are left out: they never run, so they order nothing
    (a helper of the engine may name `Engine` in its annotations)."""
    edges = all_edges(root, run_time_only=True)
    graph: dict[str, set[str]] = {}
    for where, _, target in edges:
        graph.setdefault(where.partition(":")[0], set()).add(target)
    out = []
    for component in strongly_connected(graph):
        inside = sorted({f"{where} imports {target}" for where, _, target in edges
                         if where.partition(":")[0] in component and target in component})
        out.append(f"modules {', '.join(component)} import each other: " + "; ".join(inside))
    return out


def messages(problems: list[tuple[str, str, str]]) -> list[str]:
    return [message for _, _, message in problems]


def test_the_layer_list_names_every_package() -> None:
    root = source_root()
    units = {unit(module_name(root, path)) for path in root.rglob("*.py")}
    assert units <= set(RANK), f"no layer for {sorted(units - set(RANK))}"


def test_imports_only_point_down() -> None:
    problems = messages(layer_problems(source_root()))
    assert not problems, "imports against the layers:\n" + "\n".join(problems)


@pytest.mark.slow
def test_no_modules_import_each_other_at_any_depth() -> None:
    cycles = import_cycles(source_root())
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_a_cycle_through_a_function_body_is_found_and_a_type_only_import_is_not(tmp_path: Path) -> None:
    pkg = tmp_path / "caramel"
    expand = pkg / "stages" / "expand"
    expand.mkdir(parents=True)
    for folder in (pkg, pkg / "stages", expand):
        (folder / "__init__.py").write_text("")
    (expand / "plan.py").write_text("def f():\n    from caramel.stages.expand.fit import g\n    return g\n")
    (expand / "fit.py").write_text("from caramel.stages.expand import tail\n")
    (expand / "tail.py").write_text("from . import plan\n")
    assert import_cycles(pkg) == [
        "modules caramel.stages.expand.fit, caramel.stages.expand.plan, caramel.stages.expand.tail import each other: "
        "caramel.stages.expand.fit:1 imports caramel.stages.expand.tail; caramel.stages.expand.plan:2 imports caramel.stages.expand.fit; "
        "caramel.stages.expand.tail:1 imports caramel.stages.expand.plan"]
    (expand / "tail.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                            "    from . import plan\n")
    assert import_cycles(pkg) == []


def test_the_reader_sees_hidden_and_relative_imports(tmp_path: Path) -> None:
    """An import inside a function, in a TYPE_CHECKING block and a relative one all count."""
    pkg = tmp_path / "caramel"
    stages = pkg / "stages"
    (stages / "spec").mkdir(parents=True)
    (stages / "engine").mkdir()
    for folder in (pkg, stages, stages / "spec", stages / "engine"):
        (folder / "__init__.py").write_text("")
    (stages / "engine" / "engine.py").write_text("X = 1\n")
    (stages / "spec" / "model.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from caramel.stages.engine import engine\n"
        "def f():\n"
        "    from ..engine.engine import X\n"
        "    return X\n")
    assert messages(layer_problems(pkg)) == [
        "caramel.stages.spec.model:3 imports caramel.stages.engine.engine: layer 'spec' is below 'engine'",
        "caramel.stages.spec.model:5 imports caramel.stages.engine.engine: layer 'spec' is below 'engine'",
    ]
    (stages / "engine" / "engine.py").write_text("from caramel.stages.spec import model\n")
    cycle = [p for p in messages(layer_problems(pkg)) if p.startswith("packages")]
    assert cycle == ["packages 'engine' and 'spec' import each other: caramel.stages.engine.engine:1 imports "
                     "caramel.stages.spec.model; caramel.stages.spec.model:3 imports caramel.stages.engine.engine"]


# The four kinds of code the tree holds (docs/architecture.md, "Four kinds of code"): every package and
# top-level module is exactly one of them, and the job payloads below carry a rule of their own.
KINDS: dict[str, tuple[str, ...]] = {
    "base": ("errors", "vocabulary", "resources", "__version__", "fs", "redact", "settings"),
    "stage": ("spec", "expand", "engine", "state", "analyse", "report"),
    "adapter": ("backends", "systems", "containers", "energy"),
    "consumer": ("history", "pages", "predict", "catalog", "mlperf"),
    "payload": ("payloads",),
    "entry": ("api", "sweep", "cli", "__main__", "__init__"),
}
# What runs inside a job (often in a container holding only the installed package) lives in payloads/:
# it imports only other payloads and the base, so a job never drags in the run record, the history or
# the pages, and a change there cannot break what runs on the nodes.
# What a payload may import beside payloads and the base: the helpers it wraps a command with
PAYLOAD_MAY_IMPORT = ("caramel.adapters.containers.runtime", "caramel.adapters.backends.launchers")


def test_every_package_is_one_kind_of_code() -> None:
    kinds = [name for names in KINDS.values() for name in names]
    assert sorted(kinds) == sorted(RANK) and len(kinds) == len(set(kinds))


def is_payload(module: str) -> bool:
    return unit(module) in KINDS["payload"]


def payload_problems(root: Path) -> list[str]:
    """Every import of a job payload that is neither a payload, the base, nor a wrapping helper."""
    problems = []
    for where, _, target in all_edges(root, run_time_only=True):
        source = where.partition(":")[0]
        if is_payload(source) and not (is_payload(target) or unit(target) in KINDS["base"]
                                       or target.startswith(PAYLOAD_MAY_IMPORT)):
            problems.append(f"{where} imports {target}: a job payload imports only payloads and the base")
    return problems


@pytest.mark.slow
def test_job_payloads_import_only_payloads_and_the_base() -> None:
    assert payload_problems(source_root()) == []


def test_a_payload_importing_the_run_record_is_found(tmp_path: Path) -> None:
    package = tmp_path / "caramel"
    (package / "payloads" / "workloads").mkdir(parents=True)
    (package / "stages" / "state").mkdir(parents=True)
    for folder in ("", "payloads", "payloads/workloads", "stages", "stages/state"):
        (package / folder / "__init__.py").write_text("")
    (package / "stages" / "state" / "store.py").write_text("")
    (package / "payloads" / "workloads" / "train.py").write_text("def main():\n    from caramel.stages.state.store import x\n")
    assert payload_problems(package) == [
        "caramel.payloads.workloads.train:2 imports caramel.stages.state.store: a job payload imports only payloads and the base"]


def test_the_folder_tree_shows_the_kinds() -> None:
    """Stages, adapters and consumers each in their kind's folder, job payloads in payloads/, and at the
    top only the base, the entry points and those four folders."""
    root = source_root()
    for folder, kind in GROUPS.items():
        for name in KINDS[kind]:
            assert (root / folder / name).is_dir() or (root / folder / f"{name}.py").is_file(), \
                f"{kind} {name!r} is not in {folder}/"
    top = {path.stem for path in root.iterdir() if path.suffix == ".py" or (path / "__init__.py").is_file()}
    allowed = {*KINDS["base"], *KINDS["entry"], *KINDS["payload"], *GROUPS}
    assert top <= allowed, f"at the top of the package but of no kind's folder: {sorted(top - allowed)}"


def test_every_import_names_a_module_that_exists() -> None:
    """Every import names a module of today's tree (a name from before the folders moved fails)."""
    root = source_root()
    missing = [f"{where} imports {target}" for where, _, target in all_edges(root)
               if target not in ("caramel", "caramel.__version__") and not is_module(root, target)]
    assert missing == []
