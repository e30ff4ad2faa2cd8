"""history.rows reads a metrics row's mean, min, max and reason at literal places (so that the type
checker knows each place's type): they are METRIC_COLUMNS' places."""

from __future__ import annotations

from caramel.consumers.history import rows
from caramel.consumers.history.layout import METRIC_COLUMNS
from caramel.consumers.history.metrics import FAILED_ROW, Metric


def test_the_literal_places_are_the_columns_places() -> None:
    places = (rows._MEAN, rows._MIN, rows._MAX, rows._REASON)
    assert [METRIC_COLUMNS[i] for i in places] == ["mean", "min", "max", "reason"]


def test_a_failed_rows_reason_is_no_finite_row() -> None:
    """A failed row holds no numbers: it is a failed row, never a finite one (nor a TypeError)."""
    figure = Metric("t", {"n": "1"}, "rate", "items/s", "higher", [1.0, 3.0])
    failed = Metric("t", {"n": "2"}, FAILED_ROW, "", "unknown", [], "it failed")
    made = rows.metric_rows("r", [figure, failed])
    assert [rows.failed_row(row) for row in made] == [False, True]
    assert [rows.finite_row(row) for row in made] == [True, False]
