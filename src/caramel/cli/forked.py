"""Work done by a forked process beside the command's own, on a second core where there is one:
`bench dashboard` writes the CSV of every figure while it builds the page (`meanwhile`). The child
shares the parent's memory (copy on write: nothing is copied or pickled) and reports through a pipe;
its error is the parent's, with the same message, place and hint. Where processes cannot be forked,
the same work is done in turn in the one process.

(Reading and checking an import's lines in a child was tried and dropped: the parsed runs must come
back through the pipe, and unpickling them costs what parsing the JSON does.)"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Callable, Iterator
from typing import Any

from caramel.errors import CaramelError, Location, RunError


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _problem(exc: BaseException) -> tuple[str, Location | None, str]:
    if isinstance(exc, CaramelError):
        return exc.message, exc.where, exc.hint
    return f"{type(exc).__name__}: {exc}", None, ""


@contextlib.contextmanager
def meanwhile(work: Callable[[], object]) -> Iterator[None]:
    """Run `work` in a forked process while the body runs; wait for it at the end."""
    if not _can_fork():
        work()
        yield
        return
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_work, args=(work, send), daemon=True)
    child.start()
    send.close()
    try:
        yield
    finally:
        try:
            problem = receive.recv()
        except EOFError:  # killed before it could say (out of memory)
            problem = ("the process beside this one ended without a word", None, "")
        child.join()
        receive.close()
    if problem is not None:
        raise RunError(problem[0], problem[1], hint=problem[2])


def _work(work: Callable[[], object], send: Any) -> None:
    try:
        work()
        send.send(None)
    except (CaramelError, OSError) as exc:
        send.send(_problem(exc))
