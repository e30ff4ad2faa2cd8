"""The type checker holds for the whole package: `mypy -p caramel` with setup.cfg's `[mypy]` sections
reports no error. The package is checked with every flag of `mypy --strict` (setup.cfg's
`[mypy-caramel.*]`: every function annotated, generics with their parameters, no untyped call, no Any
returned where a type is declared, only explicit re-exports), except the modules rewritten in parallel
(none at present: a module rewritten in parallel may be named in a section after it until it lands).

A new error fails this test with mypy's own lines (file:line: message [code]). Fix the code; a
`# type: ignore[code]` is for a third-party library without type information only (and then prefer
its `ignore_missing_imports` section in setup.cfg). docs/development.md says how to run it by hand.

mypy's cache sits in `.mypy_cache` of the tree (cold: about 45 s on the shared 2-core machine, warm:
a few seconds). `mypy.api.run` checks in this process: no second interpreter to start.
"""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# the modules not strict yet (rewritten in parallel): a module leaves strictness only by a change here
NOT_YET_STRICT: set[str] = set()


def _mypy_sections() -> dict[str, dict[str, str]]:
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "setup.cfg")
    return {name: dict(config[name]) for name in config.sections() if name.startswith("mypy")}


def test_the_package_is_checked_with_every_strict_flag() -> None:
    """`[mypy-caramel.*]` (with `[mypy]`) turns on each flag `mypy --strict` turns on, as mypy itself
    says (a flag a newer mypy adds to --strict fails this test until setup.cfg lists it)."""
    main = pytest.importorskip(
        "mypy.main", reason="mypy is in the [test] extra (pip install -e .[test])"
    )
    _targets, strict = main.process_options(["--strict", "-c", "pass"])
    _targets, plain = main.process_options(["-c", "pass"])
    changed = {
        name: getattr(strict, name)
        for name in dir(strict)
        if not name.startswith("_")
        and not callable(getattr(strict, name))
        and getattr(strict, name) != getattr(plain, name)
    }
    sections = _mypy_sections()
    given = {**sections["mypy"], **sections["mypy-caramel.*"]}
    assert changed, "mypy --strict changed no option: the comparison above is broken"
    for (
        name,
        value,
    ) in changed.items():  # implicit_reexport is off under --strict: its key says "no_"
        key, wanted = (
            ("no_implicit_reexport", True) if name == "implicit_reexport" else (name, value)
        )
        assert given.get(key) == str(wanted), f"setup.cfg [mypy-caramel.*] lacks {key} = {wanted}"


def test_only_the_modules_rewritten_in_parallel_are_not_strict() -> None:
    relaxed = {
        module
        for name, options in _mypy_sections().items()
        if name.startswith("mypy-caramel") and options.get("disallow_any_generics") == "False"
        for module in name.removeprefix("mypy-").split(",")
    }
    assert relaxed == NOT_YET_STRICT


@pytest.mark.slow
def test_mypy_finds_no_error() -> None:
    api = pytest.importorskip(
        "mypy.api", reason="mypy is in the [test] extra (pip install -e .[test])"
    )
    config = ROOT / "setup.cfg"
    # the cache is per tree: mypy keys it by module name, and a cache written for another tree's caramel
    # (an editable install elsewhere) would be taken for this one's
    stdout, stderr, status = api.run(
        [
            "--config-file",
            str(config),
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            "--no-error-summary",
            "--hide-error-context",
            "-p",
            "caramel",
        ]
    )
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert status == 0 and not errors, (
        f"mypy found {len(errors)} error(s) (setup.cfg [mypy]; docs/development.md):\n"
        + stdout
        + stderr
    )


def test_the_checker_fails_on_an_optional_used_unchecked(tmp_path: Path) -> None:
    """The kind of error it found in caramel (an optional value used unchecked) fails the run: the test
    above cannot pass with one."""
    api = pytest.importorskip(
        "mypy.api", reason="mypy is in the [test] extra (pip install -e .[test])"
    )
    module = tmp_path / "optional_unchecked.py"
    module.write_text(
        "def first(words: list[str]) -> str | None:\n    return words[0] if words else None\n\n\n"
        "def shout(words: list[str]) -> str:\n    return first(words).upper()\n"
    )
    stdout, _stderr, status = api.run(
        ["--cache-dir", str(ROOT / ".mypy_cache"), "--no-error-summary", str(module)]
    )
    assert status == 1 and 'Item "None" of "str | None" has no attribute "upper"' in stdout, stdout
