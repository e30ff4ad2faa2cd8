"""The engine's helpers reach it through `EngineInterface` (engine.interface), a Protocol: mypy then
checks every use (a member it lacks, an assignment to a read-only one, the engine's queue) and that
engine.Engine satisfies it. These tests check that the helpers are typed so, and that the Engine
has every member the Protocol declares, without running mypy."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import caramel.stages.engine
from caramel.stages.engine.engine import Engine
from caramel.stages.engine.interface import EngineInterface

ENGINE_DIR = Path(caramel.stages.engine.__file__).parent
HELPERS = ["arrays.py", "call_batch.py", "restart.py", "rounds.py", "shared.py", "waiting.py"]


@pytest.mark.parametrize("module", HELPERS)
def test_helpers_take_the_engine_as_its_interface(module: str) -> None:
    tree = ast.parse((ENGINE_DIR / module).read_text())
    untyped = [
        f"{module}:{node.lineno} {node.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        for arg in node.args.args
        if arg.arg == "engine"
        and ast.unparse(arg.annotation or ast.Constant(None)) != "EngineInterface"
    ]
    assert not untyped, untyped
    imported = {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "caramel.stages.engine.engine" not in imported


def test_the_engine_has_every_member_of_its_interface() -> None:
    declared = {name for name in vars(EngineInterface) if not name.startswith("_")}
    declared |= set(EngineInterface.__annotations__)
    init = ast.parse(inspect.getsource(Engine.__init__).strip().replace("\n    ", "\n"))
    assigned = {
        node.attr
        for node in ast.walk(init)
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "self"
    }
    missing = sorted(
        name for name in declared if not hasattr(Engine, name) and name not in assigned
    )
    assert not missing, missing
