"""MAD's models.json (caramel.stages.spec.mad): each entry checked on its own, errors naming the file, the
entry and the field with its line; entry text reaches the shell only as quoted words."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from caramel.errors import SpecError, did_you_mean
from caramel.stages.engine.commands import final_text
from caramel.stages.spec.mad import MadEntry, read_entries, read_models_json, run_command

GOOD = {"name": "pyt_bert", "url": "https://example.org/bert", "scripts": "scripts/bert", "n_gpus": "-1",
        "tags": ["pyt"], "args": ""}


def entries_file(tmp_path: Path, *entries: dict) -> Path:
    path = tmp_path / "models.json"
    path.write_text(json.dumps(list(entries), indent=2))
    return path


@pytest.mark.parametrize(("change", "needle", "field"), [
    ({"name": None}, "entry 1: no 'name'", '"name"'),
    ({"n_gpus": "abc"}, "entry 1 (bad): 'n_gpus': \"abc\" is not a number of GPUs", '"n_gpus"'),
    ({"timeout": "soon"}, "entry 1 (bad): 'timeout': \"soon\" is not a number of seconds",
     '"timeout"'),
    ({"tags": "pyt"}, "entry 1 (bad): 'tags': expected a list of words", '"tags"'),
    ({"scripts": "../../etc"}, "entry 1 (bad): 'scripts': '../../etc' leaves the folder", '"scripts"'),
    ({"multiple_results": "../x.csv"}, "entry 1 (bad): 'multiple_results'", '"multiple_results"'),
    ({"url": "https://h/$(reboot)"}, "entry 1 (bad): 'url': the clone's folder '$(reboot)'", '"url"'),
])
def test_a_malformed_entry_names_file_entry_field_and_line(tmp_path: Path, change: dict, needle: str,
                                                           field: str) -> None:
    bad = {k: v for k, v in {**GOOD, "name": "bad", **change}.items() if v is not None}
    path = entries_file(tmp_path, GOOD, bad)
    good, error = read_entries(str(path))
    assert isinstance(good, MadEntry) and isinstance(error, SpecError)
    text = str(error)
    assert needle in text and str(path) in text
    lines = path.read_text().splitlines()
    line = int(text.split(":", 2)[1])
    if field != '"name"':
        assert field in lines[line - 1]  # the line of the field itself
    with pytest.raises(SpecError):  # running the bad entry gives its error; the good one still builds
        read_models_json(str(path), only=[bad.get("name", "")])
    assert [b.attrs["name"] for b in read_models_json(str(path), only=["pyt_bert"]).children] == ["pyt_bert"]


def test_unknown_key_has_did_you_mean(tmp_path: Path) -> None:
    path = entries_file(tmp_path, {**GOOD, "n_gpu": "2"})
    (error,) = read_entries(str(path))
    assert "'n_gpu': unknown key" in str(error) and "did you mean 'n_gpus'?" in str(error)


def test_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text('[\n  {"name": "a",\n  "n_gpus": }\n]\n')
    with pytest.raises(SpecError, match=r"models.json:3: not valid JSON"):
        read_entries(str(path))


def test_mad_defaults_timeout_and_model_dir(tmp_path: Path) -> None:
    """madengine's execution/container_runner_helpers.py `resolve_run_timeout`: a model's timeout
    counts only above 0; 0 and -1 are the default, 7200 s (cli/commands/run.py's default)."""
    path = entries_file(tmp_path, {**GOOD, "url": "https://github.com/x/transformers.git"},
                        {**GOOD, "name": "b", "timeout": 0, "url": ""},
                        {**GOOD, "name": "c", "timeout": 60})
    first, second, third = read_entries(str(path))
    assert first.timeout == 7200 and first.model_dir == "transformers"
    assert second.timeout == 7200 and second.model_dir == "run_directory"
    assert third.timeout == 60


def test_the_longest_timeout_is_what_madengine_takes(tmp_path: Path) -> None:
    """madengine's core/timeout.py `Timeout.__enter__` hands the seconds to `signal.alarm`, a C
    int: 2**31 - 1 s is the longest it runs, a longer one overflows there (and a negative one of
    any length is the default, `resolve_run_timeout`'s `> 0`)."""
    path = entries_file(tmp_path, {**GOOD, "timeout": 2**31 - 1}, {**GOOD, "name": "b", "timeout": -10**400})
    longest, negative = read_entries(str(path))
    assert longest.timeout == 2**31 - 1 and negative.timeout == 7200


@pytest.mark.parametrize(("written", "shown"), [
    ("1e400", "Infinity"), ("1e300", "1e+300"), ("2147483648", "2147483648"),
    ("9" * 400, "99999999999999999999... (400 characters)"), ("9" * 5000, "Infinity"),
    ('"' + "9" * 400 + '"', '"9999999999999999999... (402 characters)'),
])
def test_an_overlong_timeout_is_an_error_naming_the_line(tmp_path: Path, written: str, shown: str) -> None:
    """Each was a traceback (a float of a 400-digit int overflows; Python reads no int of 5000
    digits) or a timeout madengine's `signal.alarm` refuses."""
    path = tmp_path / "models.json"
    path.write_text('[\n  {"name": "m", "scripts": "s",\n   "timeout": ' + written + "}\n]\n")
    (error,) = read_entries(str(path))
    assert isinstance(error, SpecError)
    assert f"models.json:3: entry 0 (m): 'timeout': {shown} seconds is more than madengine takes" in str(error)
    assert "at most 2147483647 s" in error.hint


MAD_DATA = Path(__file__).parents[2] / "data" / "mad"  # MAD's own entries (its README says which)


def test_real_mad_entries_with_timeout_minus_one_read_as_madengine_reads_them() -> None:
    """MAD's own entries, `"timeout": -1` included, all read; -1 is madengine's default, 7200 s
    (container_runner_helpers.py `resolve_run_timeout`: the CLI's 7200 for a timeout <= 0)."""
    found = read_entries(str(MAD_DATA / "models.json"))
    assert all(isinstance(e, MadEntry) for e in found), found
    by_name = {e.name: e for e in found if isinstance(e, MadEntry)}
    assert list(by_name) == ["pyt_huggingface_gpt2", "pyt_vllm_llama-3.1-8b", "pyt_train_flux",
                             "pyt_megatron_lm_train_llama-2-7b"]
    assert {e.timeout for e in by_name.values()} == {7200.0}
    assert by_name["pyt_megatron_lm_train_llama-2-7b"].multiple_results == "perf_Llama-2-7B.csv"


def test_scripts_folder_models_json_is_discovered_and_named_as_madengine_names_it() -> None:
    """madengine's utils/discover_models.py `DiscoverModels.discover_models`: beside the top
    models.json, each scripts/DIR/models.json; its entries are named DIR/NAME, their dockerfile
    becomes normpath(scripts/DIR/DOCKERFILE), their scripts normpath(scripts/DIR/SCRIPTS); their
    tags stay."""
    from caramel.consumers.catalog import find_benchmarks
    from caramel.stages.spec.mad import models_json_files, script_parts

    files = models_json_files(str(MAD_DATA))
    folder = MAD_DATA / "scripts" / "pytorch_train"
    files = models_json_files(str(MAD_DATA))
    assert files == [str(MAD_DATA / "models.json"), str(folder / "models.json")]
    flux, dlrm = read_entries(files[1])
    assert isinstance(flux, MadEntry) and isinstance(dlrm, MadEntry)
    assert (flux.name, dlrm.name) == ("pytorch_train/pyt_train_flux",
                                      "pytorch_train/pyt_train_dlrm")
    assert flux.dockerfile == "docker/pytorch_train" and flux.tags == ("pyt", "training")
    assert flux.timeout == 7200
    assert script_parts(flux, str(folder)) == (str(folder), ["bash", "run.sh"])
    names = {e.name: e for e in find_benchmarks([str(MAD_DATA)])}
    assert {"pyt_train_flux", flux.name, dlrm.name} <= set(names)
    assert names["pytorch_train/pyt_train_flux"].path == files[1]
    (bench,) = read_models_json(files[1], only=[dlrm.name]).children
    assert bench.attrs == {"name": dlrm.name, "outpath": "pytorch_train__pyt_train_dlrm_runs"}


def test_a_scripts_folder_without_the_top_models_json_is_no_scope(tmp_path: Path) -> None:
    """madengine reads scripts/DIR/models.json only beside a top models.json (else it raises
    FileNotFoundError)."""
    from caramel.stages.spec.mad import models_json_files

    (tmp_path / "scripts" / "x").mkdir(parents=True)
    entries_file(tmp_path / "scripts" / "x", GOOD)
    assert models_json_files(str(tmp_path)) == []
    (only,) = read_entries(str(tmp_path / "scripts" / "x" / "models.json"))
    assert isinstance(only, MadEntry) and only.name == "pyt_bert"
    entries_file(tmp_path, GOOD)
    (scoped,) = read_entries(str(tmp_path / "scripts" / "x" / "models.json"))
    assert isinstance(scoped, MadEntry) and scoped.name == "x/pyt_bert"


def test_did_you_mean_never_suggests_the_word_itself() -> None:
    assert did_you_mean("gpt2_allgpus", ["gpt2_allgpus", "pyt"]) == ""
    assert did_you_mean("gpt2_allgpu", ["gpt2_allgpus"]) == "did you mean 'gpt2_allgpus'?"


text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=30)


@settings(max_examples=60, deadline=None)
@given(args=st.lists(text, max_size=4), name=st.from_regex(r"[A-Za-z0-9_.-]{1,20}", fullmatch=True),
       url_tail=st.from_regex(r"[A-Za-z0-9_-]{1,10}", fullmatch=True), dollar=text)
def test_entry_text_reaches_the_shell_only_as_quoted_words(args, name, url_tail, dollar) -> None:
    """Whatever the args hold ($(...), quotes, $name references), the script gets exactly those words."""
    entry = MadEntry(name if name not in (".", "..") else "m", 0, None, url=f"https://h/$x/{url_tail}",  # type: ignore[arg-type]
                     scripts="scripts/a", args=shlex.join(args + [dollar]))
    command = final_text(run_command(entry, "/zoo"), {"system_gpus_per_node": "4", "system_accelerator": "amd",
                                                         "mad_container": ""})
    words = shlex.split(command)  # the generated lines quote every word: the shell splits them the same way
    at = words.index("run.sh")
    assert words[at - 4:at] == ["cd", entry.model_dir, "&&", "bash"]
    assert words[at + 1:] == [*args, dollar]
    at = words.index("clone")
    assert words[at + 1:at + 5] == ["--quiet", "--", f"https://h/$x/{url_tail}", entry.model_dir]


json_value = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                       max_size=3), max_leaves=6)
entry_like = st.fixed_dictionaries({}, optional={k: json_value for k in ("name", "n_gpus", "timeout", "tags",
                                                                         "scripts", "args", "url")})


@settings(max_examples=60, deadline=None)
@given(items=st.lists(entry_like | json_value, max_size=4))
def test_any_json_list_gives_entries_or_errors_never_a_crash(tmp_path_factory, items) -> None:
    path = tmp_path_factory.mktemp("zoo") / "models.json"
    path.write_text(json.dumps(items, indent=1))
    found = read_entries(str(path))
    assert len(found) == len(items)
    for item in found:
        if isinstance(item, SpecError):
            assert str(path) in str(item) and "entry " in str(item)
        else:
            assert item.name and item.n_gpus.lstrip("-").isdigit() and item.timeout > 0


def test_scoped_tag_selects_the_entries_of_one_scripts_folder() -> None:
    """madengine's utils/discover_models.py `DiscoverModels.select_models`: a tag `DIR/TAG` (one
    `/`, no `:`) selects the entries named DIR/... that carry TAG (or all of them for `DIR/all`)."""
    from caramel.consumers.catalog import find_benchmarks, select_by_tags

    entries = find_benchmarks([str(MAD_DATA)])
    chosen = select_by_tags(entries, ["pytorch_train/training"])
    assert [e.name for e in chosen] == ["pytorch_train/pyt_train_flux"]
    every = select_by_tags(entries, ["pytorch_train/all"])
    assert [e.name for e in every] == ["pytorch_train/pyt_train_dlrm",
                                       "pytorch_train/pyt_train_flux"]
    unscoped = [e.name for e in select_by_tags(entries, ["pyt"])]  # every file's
    assert "pyt_train_flux" in unscoped and "pytorch_train/pyt_train_flux" in unscoped

