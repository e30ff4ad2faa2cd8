"""One pass per file: the block-wise search finds exactly what JUBE's whole-text findall finds."""

import random
import tracemalloc

import pytest
import regex as re  # the analysis scans with the regex module (a time bound per pattern)

from caramel.stages.analyse.patterns import BUILTIN_PATTERNS, Probe
from caramel.stages.analyse.scan import matches, scan_file

FP = BUILTIN_PATTERNS["jube_pat_fp"]
INT = BUILTIN_PATTERNS["jube_pat_int"]
BL = BUILTIN_PATTERNS["jube_pat_bl"]

REGEXES = [
    (rf"iteration\s+{INT}/\s*{BUILTIN_PATTERNS['jube_pat_nint']}", 0),  # \s+ may cross a line end
    (rf"TFLOPs:{BL}{FP}", 0),
    (r"^(\w+) (\d+)$", 0),  # two groups, anchors
    (r"(?<=x)(\d+)", 0),  # lookbehind
    (r"\bword\b", 0),  # no group
    (r"BEGIN(.*?)END", re.DOTALL),  # spans lines
    (r"(a)?(b)", 0),  # optional group: empty matches are dropped
]


def _text(seed: int, lines: int = 400) -> str:
    rnd = random.Random(seed)
    parts = []
    for i in range(lines):
        kind = rnd.randrange(7)
        if kind == 0:
            parts.append(f" iteration {i}/ 100 | TFLOPs: {rnd.random() * 100:.2f} |")
        elif kind == 1:
            parts.append("iteration")  # its number on the next line
            parts.append(f"   {i}/ 9")
        elif kind == 2:
            parts.append(f"name {i}")
        elif kind == 3:
            parts.append(f"x{i} y{i} word words")
        elif kind == 4:
            parts.append("BEGIN " + "z" * rnd.randrange(30))
            parts.append("middle END")
        elif kind == 5:
            parts.append("ab b ab" * rnd.randrange(3))
        else:
            parts.append("")
    return "\n".join(parts) + ("\n" if seed % 2 else "")


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("chunk", [64, 257, 1000])
def test_blocks_find_what_the_whole_text_finds(tmp_path, seed, chunk):
    text = _text(seed)
    path = tmp_path / "log"
    path.write_text(text)
    probes = [Probe(f"p{i}", re.compile(rx, re.MULTILINE | flags), "string") for i, (rx, flags) in enumerate(REGEXES)]
    got: dict[str, list[str]] = {}
    scan_file(str(path), probes, lambda name, found: got.setdefault(name, []).extend(found),
              chunk=chunk, overlap=chunk // 2)
    for probe in probes:
        expected = [m for m in matches(probe.regex, text) if m]
        assert got.get(probe.name, []) == expected, probe.regex.pattern


def test_crlf_and_cr_are_line_ends_as_in_jube(tmp_path):
    path = tmp_path / "log"
    path.write_bytes(b"step 1\r\nstep 2\rstep 3\n")
    probe = Probe("s", re.compile(r"^step (\d+)$", re.MULTILINE), "int")
    got = []
    scan_file(str(path), [probe], lambda name, found: got.extend(found))
    assert got == ["1", "2", "3"]


def test_undecodable_bytes_do_not_stop_the_scan(tmp_path):
    path = tmp_path / "log"
    path.write_bytes(b"\xff\xfe garbage\nvalue: 42\n")
    got = []
    scan_file(str(path), [Probe("v", re.compile(r"value: (\d+)", re.MULTILINE), "int")],
              lambda name, found: got.extend(found))
    assert got == ["42"]


@pytest.mark.slow
def test_large_log_is_scanned_in_bounded_memory(tmp_path):
    line = (" iteration        5/ 9375000 | consumed samples: 160 | elapsed time per iteration (s): 0.9000 "
            "| TFLOPs: 60.00 |\n")
    path = tmp_path / "job.out"
    count = (8 * 1024 * 1024) // len(line)  # 8 MiB
    with open(path, "w") as handle:
        for _ in range(count // 1000):
            handle.write(line * 1000)
    probes = [Probe("elp", re.compile(rf"elapsed time per iteration \(s\):\s+{FP}", re.MULTILINE), "float"),
              Probe("it", re.compile(rf"iteration\s+{INT}/", re.MULTILINE), "int")]
    seen = {"elp": 0, "it": 0}

    def sink(name, found):
        seen[name] += len(found)

    tracemalloc.start()
    scan_file(str(path), probes, sink, chunk=256 * 1024, overlap=32 * 1024)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seen == {"elp": count // 1000 * 1000, "it": count // 1000 * 1000}
    assert peak < 3 * 1024 * 1024  # a few blocks and their matches, not the 8 MiB file
