"""restart.stop: a bench being stopped that cannot record it says so (never a silent `running`)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

from caramel.stages.engine import restart


class _FailingStore:
    def __init__(self) -> None:
        self.tries = 0

    def abandon_transaction(self) -> None:
        pass

    @contextlib.contextmanager
    def transaction(self):
        yield

    def interrupt_running(self, reason: str, recorded) -> None:
        self.tries += 1
        raise OSError(28, "No space left on device")

    def checkpoint(self) -> None:
        pass


def test_stop_that_cannot_write_warns_once_after_two_tries(capsys) -> None:
    store = _FailingStore()
    engine = SimpleNamespace(runner=SimpleNamespace(kill_all=lambda: []), store=store)
    restart.stop(engine)
    err = capsys.readouterr().err
    assert store.tries == 2
    assert err.count("warning: bench could not record that it stopped") == 1
    assert "No space left on device" in err and "bench continue" in err
