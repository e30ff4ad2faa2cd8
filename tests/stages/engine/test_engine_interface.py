"""engine.shared, engine.waiting and engine.restart reach the engine through its methods: they read its public
attributes and call its methods, never assign to them or touch its queue (heap, resume) themselves."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import caramel.stages.engine

ENGINE_DIR = Path(caramel.stages.engine.__file__).parent


def engine_uses(path: Path) -> tuple[set[str], list[str]]:
    """Attributes of the name `engine` a module reads, and the places that change one."""
    tree = ast.parse(path.read_text())
    read, changed = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "engine":
            read.add(node.attr)
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
        for target in targets:
            while isinstance(target, ast.Subscript | ast.Attribute) and not (
                    isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
                target = target.value
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    and target.value.id == "engine":
                changed.append(f"{path.name}:{node.lineno} engine.{target.attr}")
        if isinstance(node, ast.Call) and any(isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name)
                                              and a.value.id == "engine" for a in node.args) \
                and isinstance(node.func, ast.Attribute) and getattr(node.func.value, "id", "") == "heapq":
            changed.append(f"{path.name}:{node.lineno} heapq on the engine's queue")
    return read, changed


@pytest.mark.parametrize("module", ["shared.py", "waiting.py", "restart.py", "arrays.py"])
def test_helpers_use_the_engine_through_its_interface(module: str) -> None:
    read, changed = engine_uses(ENGINE_DIR / module)
    assert not changed, changed
    private = sorted(name for name in read if name.startswith("_") or name in ("heap", "resume", "version",
                                                                                  "checked_version"))
    assert not private, f"{module} reads the engine's internals: {private}"
