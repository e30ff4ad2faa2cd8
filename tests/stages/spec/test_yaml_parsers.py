"""caramel reads YAML with libyaml's parser where PyYAML has it, and PyYAML's pure-Python parser
where libyaml refuses a file (for its error messages): both must give the same tree, lines included."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.stages.spec import yaml_reader
from caramel.stages.spec.yaml_reader import _FastLoader, _Loader, read_yaml

pytestmark = pytest.mark.skipif(not hasattr(yaml, "CSafeLoader"), reason="PyYAML without libyaml")

# NEL and the Unicode line separators do not survive PyYAML's own dump and load (either parser reads a
# dumped "\x85" as a space): they are left out, as the round trip, not the parsers, would fail
# no lone surrogates: a YAML file cannot hold one (PyYAML dumps it escaped and refuses to read it back)
texts = st.text(alphabet=st.characters(blacklist_characters="\x85\u2028\u2029",
                                       blacklist_categories=("Cs",)), max_size=20)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), texts,
                    st.floats(allow_nan=False, allow_infinity=False))
keys = st.text(alphabet="abcdefghij_-0123456789 :#", min_size=1, max_size=10)
documents = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(keys, inner, max_size=4)), max_leaves=20)


def _tree(node: yaml.Node | None):
    """A node tree as plain data: tag, first line, and the children or the scalar text."""
    if node is None:
        return None
    if isinstance(node, yaml.MappingNode):
        body = [(_tree(k), _tree(v)) for k, v in node.value]
    elif isinstance(node, yaml.SequenceNode):
        body = [_tree(item) for item in node.value]
    else:
        body = node.value
    return node.tag, node.start_mark.line, body


@settings(max_examples=150, deadline=None)
@given(documents, st.booleans())
def test_libyaml_and_python_parsers_agree(data, flow: bool) -> None:
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    fast, slow = _FastLoader(text), _Loader(text)
    fast_node, slow_node = fast.get_single_node(), slow.get_single_node()
    assert _tree(fast_node) == _tree(slow_node)
    assert fast.construct_document(fast_node) == slow.construct_document(slow_node) == data


def test_a_file_libyaml_refuses_reads_with_the_python_parsers_message(tmp_path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nparameterset: {name: p, parameter: [a b: c\n")
    with pytest.raises(yaml_reader.SpecError) as caught:
        read_yaml(str(path))
    with pytest.raises(yaml.YAMLError) as python_error:
        yaml.safe_load(path.read_text())
    assert python_error.value.problem in caught.value.message
