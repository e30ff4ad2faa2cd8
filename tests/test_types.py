"""The type checker holds for the whole package: `mypy -p caramel` with setup.cfg's `[mypy]` sections
(default settings everywhere; strict on spec, expand, engine, state, analyse) reports no error.

A new error fails this test with mypy's own lines (file:line: message [code]). Fix the code; a
`# type: ignore[code]` is for a third-party library without type information only (and then prefer
its `ignore_missing_imports` section in setup.cfg). docs/development.md says how to run it by hand.

mypy's cache sits in `.mypy_cache` of the tree (cold: about 45 s on the shared 2-core machine, warm:
a few seconds). `mypy.api.run` checks in this process: no second interpreter to start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_finds_no_error() -> None:
    api = pytest.importorskip("mypy.api", reason="mypy is in the [test] extra (pip install -e .[test])")
    config = ROOT / "setup.cfg"
    # the cache is per tree: mypy keys it by module name, and a cache written for another tree's caramel
    # (an editable install elsewhere) would be taken for this one's
    stdout, stderr, status = api.run(["--config-file", str(config), "--cache-dir", str(ROOT / ".mypy_cache"),
                                      "--no-error-summary", "--hide-error-context", "-p", "caramel"])
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert status == 0 and not errors, (
        f"mypy found {len(errors)} error(s) (setup.cfg [mypy]; docs/development.md):\n" + stdout + stderr)


def test_the_checker_fails_on_an_optional_used_unchecked(tmp_path: Path) -> None:
    """The kind of error it found in caramel (an optional value used unchecked) fails the run: the test
    above cannot pass with one."""
    api = pytest.importorskip("mypy.api", reason="mypy is in the [test] extra (pip install -e .[test])")
    module = tmp_path / "optional_unchecked.py"
    module.write_text("def first(words: list[str]) -> str | None:\n    return words[0] if words else None\n\n\n"
                      "def shout(words: list[str]) -> str:\n    return first(words).upper()\n")
    stdout, _stderr, status = api.run(["--cache-dir", str(ROOT / ".mypy_cache"), "--no-error-summary",
                                       str(module)])
    assert status == 1 and 'Item "None" of "str | None" has no attribute "upper"' in stdout, stdout
