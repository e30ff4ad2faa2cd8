"""The fuzzing layer: every reader of outside input takes generated and mutated inputs (the shipped
benchmark and system files mutated included) and answers with a result or a caramel error, never an
internal error. Bounded in time: a few dozen examples per target, each under a deadline, no example
database, so the layer takes well under a minute; perf/fuzz_long.py runs the same targets long.

The targets are in fuzz_targets.py (beside this file); the marker parser is called through its
`parse_markers` only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_targets import Target, is_finding, make_targets
from hypothesis import HealthCheck, given, settings

EXAMPLES = {"xml_loader": 60, "yaml_loader": 60, "system_loader": 60, "run_record": 60, "history_rows": 60,
            "export_import": 80, "markers": 150}


@pytest.fixture(scope="module")
def targets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Target]:
    return make_targets(tmp_path_factory.mktemp("fuzz"))


def check(target: Target, examples: int) -> None:
    @settings(max_examples=examples, deadline=2000, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(target.strategy)
    def answers_or_refuses(data) -> None:
        try:
            target.run(data)
        except Exception as exc:
            if is_finding(exc):
                raise AssertionError(f"{target.name}: internal error {type(exc).__name__}: {exc}") from exc

    answers_or_refuses()


@pytest.mark.parametrize("name", [n for n in EXAMPLES if n != "markers"])
def test_reader_answers_or_refuses(targets: dict[str, Target], name: str) -> None:
    check(targets[name], EXAMPLES[name])


def test_marker_parser_answers_or_refuses(targets: dict[str, Target]) -> None:
    check(targets["markers"], EXAMPLES["markers"])


def test_every_target_is_run_here(targets: dict[str, Target]) -> None:
    assert set(targets) == set(EXAMPLES)


def test_mutations_reach_the_shipped_files() -> None:
    from fuzz_targets import BENCHMARKS, SYSTEMS

    assert {p.suffix for p in BENCHMARKS} == {".xml", ".yaml"} and len(SYSTEMS) >= 5
    assert all(Path(p).is_file() for p in BENCHMARKS + SYSTEMS)
