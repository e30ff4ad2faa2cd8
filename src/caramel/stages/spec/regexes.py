"""JUBE's built-in regex pieces (`$jube_pat_int`, `$jube_pat_fp`, ...), for every stage that reads
a log: the analyser's patterns (analyse.patterns) and the progress a run shows (engine.logprogress).
"""

from __future__ import annotations

import re

BUILTIN_PATTERNS: dict[str, str] = {
    "jube_pat_int": r"([+-]?\d+)",
    "jube_pat_nint": r"(?:[+-]?\d+)",
    "jube_pat_fp": r"([+-]?(?:\d*\.?\d+(?:[eE][-+]?\d+)?|\d+\.))",
    "jube_pat_nfp": r"(?:[+-]?(?:\d*\.?\d+(?:[eE][-+]?\d+)?|\d+\.))",
    "jube_pat_wrd": r"(\S+)",
    "jube_pat_nwrd": r"(?:\S+)",
    "jube_pat_bl": r"(?:\s+)",
}

_BUILTIN = re.compile(r"\$(?:\{(jube_pat_\w+)\}|(jube_pat_\w+))")


def with_builtins(text: str) -> str:
    """`text` with its `$jube_pat_*` (and `${jube_pat_*}`) references replaced by their regexes;
    other `$` references are left as they are."""

    def piece(found: re.Match[str]) -> str:
        name = found.group(1) or found.group(2)
        return BUILTIN_PATTERNS.get(name, found.group())

    return _BUILTIN.sub(piece, text)
