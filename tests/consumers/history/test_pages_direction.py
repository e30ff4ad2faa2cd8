"""The dashboard reads the stored direction: arrows, the headline and verdicts never guess it."""

from __future__ import annotations

from caramel.consumers.pages.sources import Figure
from caramel.consumers.pages.summary import _best, _verdict


def _figure(config: str, mean: float, direction: str, n: int = 1) -> Figure:
    return Figure(0, "t", config, {"c": config}, "performance", "", direction, n, mean, 0.0)


def test_the_headline_is_the_best_by_the_stored_direction_and_the_first_when_unknown():
    figures = [_figure("a", 10.0, "lower"), _figure("b", 5.0, "lower")]
    assert _best(figures).config == "b"
    assert _best([_figure("a", 10.0, "higher"), _figure("b", 5.0, "higher")]).config == "a"
    assert _best([_figure("a", 10.0, "unknown"), _figure("b", 50.0, "unknown")]).config == "a"


def test_a_change_of_unknown_direction_is_cannot_judge_on_the_dashboard():
    latest = [_figure("a", 120.0, "unknown", n=3)]
    word, regressed, _change = _verdict(latest, {"a": _figure("a", 100.0, "unknown", n=3)}, latest[0])
    assert (word, regressed) == ("cannot judge", 0)
    latest = [_figure("a", 120.0, "lower", n=3)]
    assert _verdict(latest, {"a": _figure("a", 100.0, "lower", n=3)}, latest[0])[0] == "regressed"


def test_one_sample_cannot_judge_spread_and_is_never_a_regression():
    """A single sample on a loaded node 21 % slower: no spread to judge by, so no red flag. The word is
    `bench compare`'s without a threshold, "cannot judge" (it was "cannot judge spread", a page's own)."""
    latest = [_figure("a", 79.0, "higher")]
    word, regressed, change = _verdict(latest, {"a": _figure("a", 100.0, "higher")}, latest[0])
    assert (word, regressed, round(change)) == ("cannot judge", 0, -21)
    latest = [_figure("a", 79.0, "higher", n=3)]  # repeats on one side only: still no spread to compare
    assert _verdict(latest, {"a": _figure("a", 100.0, "higher")}, latest[0])[0] == "cannot judge"
