from caramel.stages.expand.values import from_definition, settle
from caramel.stages.spec.model import Parameter


def test_text_with_separator_is_a_template():
    value = from_definition(Parameter("n", "1, 2,4"))
    assert value.choices == ("1", "2", "4")


def test_empty_separator_keeps_commas():
    value = from_definition(Parameter("d", "0,1,2,3", separator=""))
    assert value.choices is None and value.text == "0,1,2,3"


def test_python_evaluated_after_its_inputs():
    values = {p.name: from_definition(p) for p in [
        Parameter("idx", "{'800M': '0', '13B': '1'}['$size']", mode="python"),
        Parameter("hidden", "[2048, 5120][$idx]", mode="python"),
        Parameter("size", "13B"),
    ]}
    settle(values)
    assert values["hidden"].text == "5120"


def test_python_result_with_separator_becomes_a_template():
    values = {"x": from_definition(Parameter("x", "'1;2'", separator=";", mode="python"))}
    settle(values)
    assert values["x"].choices == ("1", "2")


def test_shell_output_keeps_lines():
    values = {"s": from_definition(Parameter("s", "echo a; echo b", mode="shell", separator="!"))}
    settle(values)
    assert values["s"].text == "a\nb\n"
