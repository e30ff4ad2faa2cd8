"""`bench completion bash|zsh|fish`: the shell's completion script for bench, by argcomplete.

argcomplete (not shtab) because it covers fish as well as bash and zsh, and because it completes
from bench's own parser at each TAB: commands, flags and choices as `--help` lists them, benchmark
names as `bench benchmarks` finds them (shipped, `$CARAMEL_BENCHMARKS_PATH`, `--benchmarks DIR`)
and the tags of the benchmark typed before (`bench run llm --tag 8<TAB>`: 800M). The price is a
Python start per TAB (docs/cli.md, Shell completion).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable

COMMAND = "completion"  # `bench completion` (cli/main.py finds this module by it)
SHELLS = ("bash", "zsh", "fish")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "completion",
        aliases=["complete"],  # JUBE's `jube complete` (bash only)
        help="print the shell completion script (bash, zsh or fish) for bench",
    )
    parser.add_argument(
        "shell",
        nargs="?",
        default="bash",
        choices=SHELLS,
        help="bash: source <(bench completion bash); zsh: the same in ~/.zshrc; "
        "fish: bench completion fish > ~/.config/fish/completions/bench.fish",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import argcomplete

    sys.stdout.write(argcomplete.shellcode(["bench"], shell=args.shell))
    return 0


def complete_and_exit(build_parser: Callable[[list[str] | None], argparse.ArgumentParser]) -> None:
    """Answer the shell's completion request (argcomplete's `_ARGCOMPLETE` protocol) and exit;
    the parser is built for the command on the line, so one module is imported when it is known."""
    import argcomplete

    try:
        words = shlex.split(os.environ.get("COMP_LINE", ""))[1:]
    except ValueError:  # an open quote: complete without knowing the command
        words = []
    argcomplete.autocomplete(build_parser(words or None))


def benchmark_names(prefix: str, **_: object) -> list[str]:
    """The names `bench benchmarks` lists that start with `prefix`, and the benchmark files
    (*.xml, *.yaml, *.yml, models.json) of the folder the prefix is in."""
    from caramel.consumers.catalog import find_benchmarks

    names = sorted({entry.name for entry in find_benchmarks()})
    return [name for name in names if name.startswith(prefix)] + _files(prefix)


def _files(prefix: str) -> list[str]:
    folder, start = os.path.split(prefix)
    try:
        found = sorted(os.listdir(folder or "."))
    except OSError:
        return []
    return [
        os.path.join(folder, name) + ("/" if os.path.isdir(os.path.join(folder, name)) else "")
        for name in found
        if name.startswith(start)
        and (
            os.path.isdir(os.path.join(folder, name))
            or name.endswith((".xml", ".yaml", ".yml", ".json"))
        )
    ]


def benchmark_tags(prefix: str, parsed_args: argparse.Namespace, **_: object) -> list[str]:
    """The tags the benchmark given before mentions (spec.loader.known_tags: its tag expressions,
    those of the files it reads, its `<tags>`) and the system files' names, starting with
    `prefix`; nothing where no benchmark was given or it cannot be read."""
    from caramel.adapters.systems import system_names
    from caramel.consumers.catalog import resolve_benchmark
    from caramel.stages.spec.loader import known_tags

    given = vars(parsed_args)
    file = given.get("file")
    if not file:
        return []
    try:
        path = resolve_benchmark(file, list(given.get("benchmarks") or []))
        known = known_tags(path, list(given.get("include_path") or []))
        known |= set(system_names(list(given.get("systems") or [])))
    except Exception:  # completion never fails loudly: a broken file completes no tag
        return []
    return sorted(tag for tag in known if tag.startswith(prefix))
