"""cli/main.py finds the commands from their modules (as Ramble's cmd/ package:
ramble/cmd/__init__.py, `all_commands` lists the folder, `get_module` imports one command's module
by its name): each command module declares `COMMAND` and `register`; no list of commands to edit,
and one command's call imports only its own module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import caramel.cli
from caramel.cli import main as cli_main

SRC = Path(__file__).resolve().parents[2] / "src"


def test_every_command_module_is_found_by_its_command_name() -> None:
    modules = cli_main.module_names()
    commands = cli_main.command_modules(modules)
    names = {m.COMMAND for m in commands}
    assert names >= {"plan", "run", "continue", "history", "import", "list", "system"}
    for module in commands:
        assert cli_main.command_module(module.COMMAND, modules) is module, module.__name__
    assert cli_main.command_module("common", modules) is None  # a helper module is no command


def test_a_new_command_is_one_module_in_the_package(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "hello.py").write_text(
        'COMMAND = "hello"\n\n\n'
        "def register(sub):\n"
        '    parser = sub.add_parser("hello", help="say hello")\n'
        '    parser.set_defaults(func=lambda args: print("hello") or 4)\n')
    monkeypatch.setattr(caramel.cli, "__path__", [*caramel.cli.__path__, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "caramel.cli.hello", raising=False)
    assert cli_main.main(["hello"]) == 4
    assert capsys.readouterr().out == "hello\n"
    assert "hello" in cli_main.build_parser().format_help()


PROBE = """
import json, sys
from caramel.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("caramel.cli."))), file=sys.stderr)
"""


def test_one_command_imports_its_module_only() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", PROBE, "import", "--help"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert "usage: bench import" in done.stdout
    imported = json.loads(done.stderr.strip().splitlines()[-1])
    # cli.arguments: bench's parser class (its did-you-mean), which every command's parser is;
    # cli.spellings: the check of a required flag that has an old spelling too (main.py)
    assert imported == ["caramel.cli.arguments", "caramel.cli.export", "caramel.cli.import_cmd", "caramel.cli.main",
                        "caramel.cli.spellings"]
