"""`performance:` lines read as madengine reads them (analyse.performance.first_performance).

madengine searches a model's whole log once (execution/container_runner.py,
`ContainerRunner.run_container`: `re.search(PERFORMANCE_LOG_PATTERN, log_content)`, the pattern in
deployment/base.py), so the first match is the figure; without one, it takes the first Hugging Face
Trainer `train_samples_per_second` (the `hf_pattern` beside it). Every expected value below is what
that code gives (run on these texts). `madengine_reading` re-implements those semantics by hand,
without a regular expression, and a Hypothesis property checks caramel's reading against it; with
CARAMEL_MADENGINE_SRC naming a checkout of madengine's `src/`, the same property runs against
madengine's own pattern.
"""

from __future__ import annotations

import importlib.util
import os
import re
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.stages.analyse.performance import first_performance

TRAINER_METRIC = "samples_per_second"  # the metric madengine gives the Trainer's figure


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("performance: 14164 samples_per_second", ("14164", "samples_per_second")),
        (
            "performance: 14164, samples_per_second",
            ("14164", "samples_per_second"),
        ),  # a comma after the number
        ("final performance: 77 samples/s", ("77", "samples/s")),  # anywhere in the line
        ("performance: 42 img/s (averaged)", ("42", "img/s")),  # the metric is one word
        ("performance: 3.06 examples/sec", ("3.06", "examples/sec")),
        ("performance: 123/s, tokens", ("123", "tokens")),  # a unit suffix, then the metric
        ("performance: 123 /s metric", ("123", "metric")),
        ("performance: 5, /s", ("5", "/s")),
        ("performance: 1.5e3 ms", ("1.5e3", "ms")),
        ("performance: -.5 loss", ("-.5", "loss")),
        (
            "performance: 12\nnext line",
            ("12", "next"),
        ),  # the blanks before the metric may end the line
        ("performance: 1 a\nperformance: 2 b", ("1", "a")),  # the first match is the figure
        ("performance: fast img/s\nperformance: 2 b", ("2", "b")),  # the first that matches
        (
            "{'train_samples_per_second': 4.23, 'epoch': 1}",
            ("4.23", TRAINER_METRIC),
        ),  # the Trainer's figure
        ("performance:14164 x", None),  # no blank after the colon
        ("performance:  samples_per_second", None),  # no number
        ("performance: fast img/s", None),
        ("performance: 5 , /s x", None),
        ("performance: 1e x", None),
        ("performance: 7/s,x", None),
    ],
)
def test_madengine_line_forms(text: str, expected: tuple[str, str] | None) -> None:
    found = first_performance(text)
    assert (None if found is None else (found.number, found.metric)) == expected
    assert madengine_reading(text) == expected


# --- madengine's reading, by hand: PERFORMANCE_LOG_PATTERN is
#   "performance:", blanks, NUMBER,
#   optionally (","? blanks? "/" LETTERS blanks? ","?  or  ","), blanks, METRIC
# with NUMBER = sign? (digits "."? digits* | "." digits) (e sign? digits)?, METRIC = a run without
# blanks or commas. Only the longest NUMBER can be followed by what comes next (a comma, "/" or a
# blank is no part of a number), so no backtracking is needed.
DIGITS = frozenset(string.digits)
LETTERS = frozenset(string.ascii_letters)
TRAINER = "train_samples_per_second"


def _blanks(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _digits(text: str, at: int) -> int:
    while at < len(text) and text[at] in DIGITS:
        at += 1
    return at


def _number_end(text: str, at: int) -> int:
    """The end of the longest number at `at`, or -1."""
    at += at < len(text) and text[at] in "+-"
    if at < len(text) and text[at] in DIGITS:
        at = _digits(text, at)
        if at < len(text) and text[at] == ".":
            at = _digits(text, at + 1)
    elif (
        text[at : at + 1] == "." and text[at + 1 : at + 2] in DIGITS
    ):  # "" is in no set of characters
        at = _digits(text, at + 1)
    else:
        return -1
    exponent = at + 1 if text[at : at + 1] in ("e", "E") else at
    if exponent > at:
        exponent += exponent < len(text) and text[exponent] in "+-"
        if exponent < len(text) and text[exponent] in DIGITS:
            at = _digits(text, exponent)
    return at


def _metric_after_blanks(text: str, at: int) -> str:
    start = _blanks(text, at)
    if start == at:
        return ""
    end = start
    while end < len(text) and not text[end].isspace() and text[end] != ",":
        end += 1
    return text[start:end]


def _metric(text: str, at: int) -> str:
    """The metric after a number ending at `at`: the three ways the pattern tries, in its order."""
    slash = _blanks(text, at + (text[at : at + 1] == ","))
    if text[slash : slash + 1] == "/" and text[slash + 1 : slash + 2] in LETTERS:
        letters = slash + 1
        while letters < len(text) and text[letters] in LETTERS:
            letters += 1
        comma = _blanks(text, letters)
        found = _metric_after_blanks(text, comma + 1) if text[comma : comma + 1] == "," else ""
        found = found or _metric_after_blanks(text, letters)
        if found:
            return found
    if text[at : at + 1] == ",":
        found = _metric_after_blanks(text, at + 1)
        if found:
            return found
    return _metric_after_blanks(text, at)


def madengine_reading(text: str) -> tuple[str, str] | None:
    at = text.find("performance:")
    while at >= 0:
        start = _blanks(text, at + len("performance:"))
        end = _number_end(text, start) if start > at + len("performance:") else -1
        metric = _metric(text, end) if end > 0 else ""
        if metric:
            return text[start:end], metric
        at = text.find("performance:", at + 1)
    at = text.find(TRAINER)
    while at >= 0:
        start = at + len(TRAINER)
        while start < len(text) and (text[start] in "'\":=" or text[start].isspace()):
            start += 1
        if start > at + len(TRAINER) and text[start : start + 1] in DIGITS:
            end = start
            while end < len(text) and text[end] in DIGITS | set(".eE+-"):
                end += 1
            return text[start:end], TRAINER_METRIC
        at = text.find(TRAINER, at + 1)
    return None


PIECES = [
    "performance:",
    "final ",
    " ",
    "  ",
    "\t",
    "\n",
    "\r\n",
    "\u00a0",
    "\u2003",
    "\x1c",
    ",",
    "/",
    "/s",
    "s",
    "img",
    "ms",
    "samples/s",
    "(averaged)",
    "0",
    "7",
    "42",
    "3.5",
    ".",
    "e",
    "E",
    "+",
    "-",
    "e5",
    TRAINER,
    "'",
    '"',
    ":",
    "=",
    "x",
    "é",
    "٣",
]
noise = st.lists(st.sampled_from(PIECES) | st.text(max_size=3), max_size=8).map("".join)
blanks = st.lists(st.sampled_from([" ", " ", "\t", "\n", "\u00a0", "\x1c"]), max_size=3).map(
    lambda b: "".join(b) or " "
)
no_blank = st.sampled_from(["", "x"])
numbers = st.sampled_from(["", "+", "-"]).flatmap(
    lambda sign: st.from_regex(
        r"([0-9]{0,3}\.?[0-9]{0,2}|\.[0-9]{1,2}|\.)([eE][+-]?[0-9]{0,2})?", fullmatch=True
    ).map(lambda n: sign + n)
)
suffixes = st.sampled_from(["", ",", "/s", "/s,", ", /s", " /s ,", "/", ",/", "/1", " , "])
metrics = st.sampled_from(
    ["samples/s", "img/s", "ms", ",x", "(averaged)", "", "é", "tok_per_s_per_gpu"]
)
# a performance: line's parts, each maybe malformed, amid noise: most texts come near a match
near_lines = st.tuples(
    noise,
    st.sampled_from(["performance:", "final performance:", "performance"]),
    blanks | no_blank,
    numbers,
    suffixes,
    blanks | no_blank,
    metrics,
    noise,
).map("".join)
trainer_lines = st.tuples(
    noise, st.just(TRAINER), st.sampled_from(["': ", " = ", ":", "", "'x"]), numbers, noise
).map("".join)
texts = st.lists(near_lines | trainer_lines | noise, min_size=1, max_size=3).map("".join)


def _caramel(text: str) -> tuple[str, str] | None:
    found = first_performance(text)
    return None if found is None else (found.number, found.metric)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(text=texts)
def test_caramel_reads_any_text_as_madengine_does(text: str) -> None:
    assert _caramel(text) == madengine_reading(text)


def _madengine_pattern() -> str | None:
    """madengine's own PERFORMANCE_LOG_PATTERN, from the checkout CARAMEL_MADENGINE_SRC names (its
    base.py needs only jinja2 and rich), else None."""
    source = os.environ.get("CARAMEL_MADENGINE_SRC")
    if not source:
        return None
    spec = importlib.util.spec_from_file_location(
        "madengine_base", Path(source) / "madengine/deployment/base.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PERFORMANCE_LOG_PATTERN


@pytest.mark.skipif(
    not os.environ.get("CARAMEL_MADENGINE_SRC"),
    reason="CARAMEL_MADENGINE_SRC names no madengine src/",
)
@settings(max_examples=400, deadline=None)
@given(text=texts)
def test_caramel_reads_any_text_as_madengines_own_pattern(text: str) -> None:
    pattern = _madengine_pattern()
    assert pattern is not None
    found = re.search(pattern, text)
    if found:
        assert _caramel(text) == (found.group(1).strip(), found.group(2).strip())
    else:
        assert _caramel(text) is None or _caramel(text)[1] == TRAINER_METRIC
