from caramel.stages.expand.substitute import escape, references, substitute


def test_both_placeholder_forms():
    assert substitute("$a-${b}x", {"a": "1", "b": "2"}) == "1-2x"


def test_unknown_and_malformed_placeholders_stay():
    text = "$BENCH_DIR $(date) ${X:+y} ${MASTER_ADDR}i $"
    assert substitute(text, {"a": "1"}, final=True) == text


def test_escaped_dollar_kept_until_final():
    assert substitute("$$HOME $a", {"a": "1"}) == "$$HOME 1"
    assert substitute("$$HOME $a", {"a": "1"}, final=True) == "$HOME 1"


def test_inserted_values_are_literal():
    assert substitute("$a", {"a": "$b", "b": "no"}) == "$b"


def test_names_end_at_non_word_characters():
    assert substitute("$nodes.$nodes_x", {"nodes": "4"}) == "4.$nodes_x"


def test_references():
    assert references("$a ${b} $$c ${d:-x}") == {"a", "b"}
    assert escape("a$b") == "a$$b"
