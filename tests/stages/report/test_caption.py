"""A table's caption (issue 21: the estimator of its means is stated): shown by pretty, markdown and
json, never inside csv or aligned (JUBE's shape), and kept with the table in the analysis cache."""

from __future__ import annotations

import json

from caramel.stages.report.table import (
    Key,
    TableData,
    render,
    table_data_from_record,
    table_data_record,
)

CAPTION = "estimator: mean of all samples, sd ddof=1"


def data(caption: str = CAPTION) -> TableData:
    return TableData("t", "csv", ",", False, [Key("model", None, "", 0), Key("performance", None, "", 0)],
                     [["a", 1.5]], [["a", "1.5"]], ["done"], [0], caption=caption)


def test_caption_in_pretty_markdown_and_json_only() -> None:
    assert render(data(), "pretty").splitlines()[:2] == ["t:", CAPTION]
    assert f"*{CAPTION}*" in render(data(), "markdown")
    assert json.loads(render(data(), "json"))["caption"] == CAPTION
    assert render(data(), "csv") == "model,performance\na,1.5\n"
    assert CAPTION not in render(data(), "aligned")
    assert "caption" not in json.loads(render(data(""), "json"))
    assert render(data(""), "pretty").splitlines()[1].startswith("| model")


def test_caption_is_kept_with_the_table() -> None:
    assert table_data_from_record(json.loads(json.dumps(table_data_record(data())))).caption == CAPTION
