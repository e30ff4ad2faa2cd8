"""Every test keeps caramel's user data (the run registry, campaigns, the history) in a folder of its own.

Without this, a test that calls bench in-process, or a subprocess that inherits this environment, would
add runs to the user's ~/.local/share/caramel: tests are hermetic. A test that sets its own values
(tests/run_bench.isolated_env, monkeypatch) still wins.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path_factory.mktemp("caramel-data")
    monkeypatch.setenv("CARAMEL_DATA_DIR", str(folder))
    monkeypatch.setenv("CARAMEL_HISTORY", str(folder / "history.db"))
