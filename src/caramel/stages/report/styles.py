"""The output styles of a result table, in a module of their own: `bench result --help` lists them
without importing the table code (tests/cli/test_startup_imports.py guards what --help imports)."""

from __future__ import annotations

from typing import Literal

Style = Literal["csv", "pretty", "aligned", "markdown", "json"]
STYLES: tuple[Style, ...] = ("csv", "pretty", "aligned", "markdown", "json")
