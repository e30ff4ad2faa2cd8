"""Launchers by name, and the argument parser of command wrappers (container runner, energy meter)."""

from __future__ import annotations

import argparse

import pytest

from caramel.adapters.backends import launchers
from caramel.errors import RunError


def test_get_by_name() -> None:
    assert launchers.get("local").name == "local"
    with pytest.raises(RunError, match="no launcher named 'locl'") as err:
        launchers.get("locl")
    assert err.value.hint == "did you mean 'local'?"


def test_wrapped_command_is_what_follows_the_dashes(capsys) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--image")
    args, command = launchers.wrapped_command(parser, ["--image", "x.sif", "--", "python", "-c", "1"])
    assert args.image == "x.sif" and command == ["python", "-c", "1"]
    assert launchers.wrapped_command(argparse.ArgumentParser(), ["echo", "hi"])[1] == ["echo", "hi"]
    with pytest.raises(SystemExit):
        launchers.wrapped_command(argparse.ArgumentParser(), ["--"])
    assert "no command given after --" in capsys.readouterr().err
