"""Kernel models from microbenchmarks, execution profiles and `--method kernels` (docs/microbench.md)."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.run_bench import bench

from caramel.consumers.predict.kernels import KernelCall, KernelModels, parse_case
from caramel.consumers.predict.points import PredictError
from caramel.consumers.predict.profile import gpt_profile, parse_profile

from .conftest import record

GEMM_RATE, COPY_RATE, LAUNCH = 2e10, 1e10, 2e-5  # a synthetic system: FLOP/s, B/s, s per kernel


def gemm_seconds(m: int, n: int, k: int) -> float:
    return LAUNCH + 2.0 * m * n * k / GEMM_RATE


def synthetic_rows(factor: float = 1.0) -> list[tuple[str, int, list[float]]]:
    rows = [(f"gemm:{m}x{n}x{k}:float32", 1, [factor * gemm_seconds(m, n, k)])
            for m in (64, 256, 1024) for n in (64, 512) for k in (64, 1024)]
    rows += [(f"copy:{b}", 1, [factor * (LAUNCH + 2 * b / COPY_RATE)]) for b in (65536, 1048576, 16777216, 67108864)]
    rows += [(f"allreduce:{b}", 2, [factor * (1e-4 + b / 1e9)]) for b in (65536, 1048576, 4194304)]
    return rows


def test_kernel_models_fit_and_validate_leave_one_out_on_a_known_law() -> None:
    models = KernelModels.from_rows("synthetic", synthetic_rows())
    errors = {kind: errs for kind, _, _, errs, _ in models.validation()}
    assert set(errors) == {"gemm", "copy", "allreduce"}
    assert len(errors["gemm"]) == 12 and statistics.median(errors["gemm"]) < 10
    seconds, _ = models.predict(KernelCall("gemm", (512, 256, 512)))
    assert seconds == pytest.approx(gemm_seconds(512, 256, 512), rel=0.15)


def test_a_case_that_is_not_one_is_a_clear_error() -> None:
    assert parse_case("gemm:2x3x4:bfloat16") == KernelCall("gemm", (2, 3, 4), "bfloat16")
    with pytest.raises(PredictError, match="not a microbenchmark case"):
        parse_case("gemm:2x3")


@given(st.text(max_size=40))
def test_any_case_text_parses_or_is_a_clear_error(text: str) -> None:
    try:
        call = parse_case(text)
    except PredictError as exc:
        assert "not a microbenchmark case" in exc.message
    else:
        assert call.kind in ("gemm", "copy", "eltwise", "conv", "attention", "attention_backward", "allreduce",
                             "allgather")


@given(st.integers(1, 10**6), st.integers(1, 10**6), st.integers(1, 10**6), st.sampled_from(["float32", "bfloat16"]))
def test_a_gemm_case_round_trips(m: int, n: int, k: int, dtype: str) -> None:
    assert parse_case(f"gemm:{m}x{n}x{k}:{dtype}") == KernelCall("gemm", (m, n, k), dtype)


@given(st.dictionaries(st.sampled_from(["hidden", "layers", "heads", "seq", "batch", "vocab", "dp", "tp", "pp", "x"]),
                       st.integers(-2, 300), max_size=10))
def test_any_profile_text_parses_or_is_a_clear_error(fields: dict) -> None:
    try:
        profile = parse_profile("gpt:" + " ".join(f"{k}={v}" for k, v in fields.items()))
    except PredictError:
        return
    assert profile.kernels and all(c.count > 0 for c in profile.kernels)


def test_the_profile_of_a_tiny_gpt_counts_its_gemms_and_flops() -> None:
    h, layers, seq, batch, vocab = 64, 2, 16, 4, 128
    profile = gpt_profile(hidden=h, layers=layers, heads=4, seq=seq, batch=batch, vocab=vocab)
    gemm_flops = sum(c.count * c.work() for c in profile.kernels if c.kind == "gemm")
    attention_flops = sum(c.count * c.work() for c in profile.kernels if c.kind.startswith("attention"))
    tokens = batch * seq
    # forward + backward = 3 x forward: 24 L h^2 per token in the layers, 2 V h in the head; the fused
    # attention 4 L s h forward, its backward 2.5 times that (the scores computed again)
    assert gemm_flops == pytest.approx(3 * tokens * (24 * layers * h * h + 2 * vocab * h))
    assert attention_flops == pytest.approx(3.5 * 4 * layers * h * seq * tokens)
    assert not any(c.kind == "allreduce" for c in profile.kernels)
    parallel = gpt_profile(hidden=h, layers=layers, heads=4, seq=seq, batch=batch, vocab=vocab, dp=2, tp=2)
    assert {c.ranks for c in parallel.kernels if c.kind == "allreduce"} == {2}
    assert parse_profile(f"gpt:hidden={h},layers={layers},heads=4,seq={seq},batch={batch},vocab={vocab}").kernels \
        == profile.kernels
    with pytest.raises(PredictError, match="needs seq"):
        parse_profile("gpt:hidden=64,layers=2,heads=4,batch=4,vocab=128")
    with pytest.raises(PredictError, match="heads must be at least 1"):
        parse_profile("gpt:hidden=64 layers=2 heads=0 seq=8 batch=4 vocab=128")
    with pytest.raises(PredictError, match="unknown key"):
        parse_profile("gpt:hidden=64 layers=2 heads=4 seq=8 batch=4 vocab=128 colour=3")


def test_a_captured_profile_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"kernels": [{"kind": "gemm", "shape": [8, 8, 8], "count": 3}], "launches": 5}))
    profile = parse_profile(str(path))
    assert profile.kernels == [KernelCall("gemm", (8, 8, 8), count=3.0)] and profile.launches == 5


def _microbench(history: Path, system: str, factor: float) -> None:
    rows = [({"Kernel": case, "Ranks": ranks, "Threads": 1}, samples) for case, ranks, samples in synthetic_rows(factor)]
    record(history, "microbench", rows, metric="Seconds", system=system, table="kernels", key=f"mb-{system}")


def _gpt_seconds(factor: float, hidden: int, batch: int) -> float:
    models = KernelModels.from_rows("x", synthetic_rows(factor))
    profile = gpt_profile(hidden=hidden, layers=2, heads=4, seq=64, batch=batch, vocab=512)
    kernels = sum(c.count * models.predict(c)[0] for c in profile.kernels)
    return kernels + 1e-4 * profile.launches  # a real overhead of 100 us per launch


@pytest.mark.slow
def test_method_kernels_end_to_end_on_a_synthetic_history(data: Path, env: dict) -> None:
    history = Path(env["CARAMEL_HISTORY"])
    _microbench(history, "onecore", 2.0)
    _microbench(history, "twocores", 1.0)
    rows = [({"Hidden": h, "Batch": b}, [_gpt_seconds(2.0, h, b)]) for h in (64, 128) for b in (4, 8)]
    record(history, "gpt_kernels", rows, metric="Time/iteration(s)", system="onecore", table="gpt",
           file=str(data / "gpt_kernels.yaml"), tags=["onecore", "analytic"], key="gpt-onecore")
    env = dict(env, CARAMEL_SYSTEMS_PATH=str(data / "systems"))
    out = bench("predict", "gpt_kernels.yaml", "--tag", "large", "twocores", "analytic", "--method", "kernels",
                "--format", "json",
                cwd=data, env=env)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["method"] == "kernels" and doc["microbenchmark_runs"] == ["mb-twocores"]
    assert doc["overhead"]["learned_on"] == "onecore" and doc["overhead"]["configurations"] == 4
    assert doc["overhead"]["seconds_per_launch"] == pytest.approx(1e-4, rel=0.2)
    for p in doc["predictions"]:
        truth = _gpt_seconds(1.0, int(p["parameters"]["Hidden"]), int(p["parameters"]["Batch"]))
        assert p["value"] == pytest.approx(truth, rel=0.1)
        assert p["low"] < p["value"] < p["high"]
    # the same through auto: twocores never ran it, so kernels is chosen and says why
    out = bench("predict", "gpt_kernels.yaml", "--tag", "large", "twocores", "analytic", cwd=data, env=env)
    assert out.returncode == 0 and "method: kernels" in out.stdout and "mb-twocores" in out.stdout
    out = bench("predict", "gpt_kernels.yaml", "--tag", "large", "twocores", "analytic", "--method", "kernels",
                "--validate",
                cwd=data, env=env)
    assert out.returncode == 0 and "leave-one-out of twocores's kernel models" in out.stdout
    assert "gemm" in out.stdout and "copy" in out.stdout


def _captured_seconds(data: Path, factor: float, hidden: int, batch: int) -> float:
    models = KernelModels.from_rows("x", synthetic_rows(factor))
    profile = parse_profile(f"captured:gpt:hidden={hidden} layers=2 heads=4 seq=64 batch={batch} vocab=512 "
                            "dtype=float32", data)
    return sum(c.count * models.predict(c)[0] for c in profile.kernels) + 1e-4 * profile.launches


@pytest.mark.slow
def test_method_kernels_sums_over_the_captured_profiles_kept_beside_the_file(data: Path, env: dict) -> None:
    history = Path(env["CARAMEL_HISTORY"])
    _microbench(history, "onecore", 2.0)
    _microbench(history, "twocores", 1.0)
    kept = sorted((data / "profiles").iterdir())
    rows = [({"Hidden": h, "Batch": b}, [_captured_seconds(data, 2.0, h, b)]) for h in (64, 128) for b in (4, 8)]
    record(history, "gpt_kernels", rows, metric="Time/iteration(s)", system="onecore", table="gpt",
           file=str(data / "gpt_kernels.yaml"), tags=["onecore"], key="gpt-onecore")
    env = dict(env, CARAMEL_SYSTEMS_PATH=str(data / "systems"))
    out = bench("predict", "gpt_kernels.yaml", "--tag", "large", "twocores", "--method", "kernels", "--format", "json",
                cwd=data, env=env)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["profiles"] == f"4 captured with torch.profiler, kept in {data.resolve() / 'profiles'}"
    # the synthetic suite has no attention case: the fused attention is summed from GEMMs, and said
    assert doc["approximated_kernels"] == ["attention/float32 as GEMMs", "attention_backward/float32 as GEMMs"]
    assert doc["unmapped_operators"] == {}
    assert doc["overhead"]["seconds_per_launch"] == pytest.approx(1e-4, rel=0.2)
    assert len(doc["predictions"]) == 4
    for p in doc["predictions"]:
        truth = _captured_seconds(data, 1.0, int(p["parameters"]["Hidden"]), int(p["parameters"]["Batch"]))
        assert p["value"] == pytest.approx(truth, rel=0.1)
    assert sorted((data / "profiles").iterdir()) == kept  # read, not captured again


@pytest.mark.slow
def test_no_microbenchmarks_names_the_system_and_the_suite(data: Path, env: dict) -> None:
    env = dict(env, CARAMEL_SYSTEMS_PATH=str(data / "systems"))
    _microbench(Path(env["CARAMEL_HISTORY"]), "onecore", 1.0)
    out = bench("predict", "gpt_kernels.yaml", "--tag", "twocores", "--method", "kernels", cwd=data, env=env)
    assert out.returncode == 2
    assert "no microbenchmarks of system 'twocores'" in out.stderr and "bench run microbench --tag twocores" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.slow
def test_plan_predict_by_kernels_gives_node_hours_and_names_method_and_run(tmp_path: Path, env: dict) -> None:
    _microbench(Path(env["CARAMEL_HISTORY"]), "localcluster", 1.0)
    llm = Path(__file__).parents[3] / "benchmarks" / "llm.yaml"
    out = bench("plan", str(llm), "--tag", "800M", "localcluster", "--predict", "--method", "kernels",
                cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    assert "method: kernels" in out.stdout and "microbenchmark run mb-localcluster" in out.stdout
    assert "campaign:" in out.stdout and "node-hours" in out.stdout and "90 %" in out.stdout


CAPTURED = "captured:gpt:hidden=32 layers=1 heads=2 seq=8 batch=2 vocab=32"


@pytest.mark.slow
def test_a_captured_profile_is_kept_beside_the_benchmark_file_and_read_again(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("torch")
    from caramel.payloads.workloads import profile_capture

    profile = parse_profile(CAPTURED, tmp_path)
    (kept,) = (tmp_path / "profiles").glob("gpt-*.json")
    assert json.loads(kept.read_text())["spec"] == "gpt:batch=2 heads=2 hidden=32 layers=1 seq=8 vocab=32"
    assert profile.source == f"captured ({kept})" and profile.launches > 0
    analytic = gpt_profile(hidden=32, layers=1, heads=2, seq=8, batch=2, vocab=32)
    assert sum(c.count * c.work() for c in profile.kernels if c.kind == "gemm") == pytest.approx(
        sum(c.count * c.work() for c in analytic.kernels if c.kind == "gemm"))

    def no_capture(**_: object) -> dict:
        raise AssertionError("captured again")

    monkeypatch.setattr(profile_capture, "capture_gpt", no_capture)
    assert parse_profile(CAPTURED.replace(" ", ","), tmp_path).kernels == profile.kernels  # same spec, same file


def test_a_captured_profile_of_a_layout_the_trainer_lacks_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(PredictError, match="data parallel only"):
        parse_profile(CAPTURED + " tp=2", tmp_path)
    with pytest.raises(PredictError, match="captures its gpt and resnet"):
        parse_profile("captured:bert:hidden=8", tmp_path)
    with pytest.raises(PredictError, match="resnet needs batch"):
        parse_profile("captured:resnet:width=8", tmp_path)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(PredictError, match="not a profile"):
        parse_profile("bad.json", tmp_path)
    assert not (tmp_path / "profiles").exists()


@pytest.mark.slow
def test_plan_llm_800m_on_localcluster_by_kernels_gives_node_hours_with_an_interval(env: dict) -> None:
    """`bench plan llm --tag 800M localcluster --predict --method kernels`: the shipped Megatron file's
    analytic profile over localcluster's kernel models; method and microbenchmark run named."""
    history = Path(env["CARAMEL_HISTORY"])
    _microbench(history, "localcluster", 1.0)
    llm = Path(__file__).resolve().parents[3] / "benchmarks" / "llm.yaml"
    out = bench("plan", str(llm), "--tag", "800M", "localcluster", "--predict", "--method", "kernels", "--format",
                "json", cwd=history.parent, env=env)
    assert out.returncode == 0, out.stderr
    cost = json.loads(out.stdout)["cost"]
    assert cost["method"] == "kernels" and cost["microbenchmark_runs"] == ["mb-localcluster"]
    assert "derived analytically from the model shape" in cost["profiles"]
    low, value, high = cost["node_hours"][1], cost["node_hours"][0], cost["node_hours"][2]
    assert 0 < low < value < high
    text = bench("plan", str(llm), "--tag", "800M", "localcluster", "--predict", "--method", "kernels",
                 cwd=history.parent, env=env).stdout
    assert "method: kernels" in text and "mb-localcluster" in text and re.search(
        r"campaign: \S+ \(90 %: \S+ \.\. \S+\) node-hours", text)


def test_without_torch_a_captured_gpt_profile_falls_back_to_the_analytic_one(tmp_path: Path, monkeypatch) -> None:
    import sys

    import caramel.payloads.workloads

    monkeypatch.setitem(sys.modules, "caramel.payloads.workloads.profile_capture", None)  # import fails as without torch
    monkeypatch.delattr(caramel.payloads.workloads, "profile_capture", raising=False)
    profile = parse_profile(CAPTURED, tmp_path)
    assert profile.kernels == gpt_profile(hidden=32, layers=1, heads=2, seq=8, batch=2, vocab=32).kernels
    assert "analytic" in profile.source and not (tmp_path / "profiles").exists()
    with pytest.raises(PredictError, match="no torch here"):
        parse_profile("captured:resnet:batch=2", tmp_path)


@pytest.mark.slow
def test_an_element_wise_pass_uses_its_own_model_and_else_the_copy_one() -> None:
    without = KernelModels.from_rows("old", synthetic_rows())  # a suite run before eltwise cases were in it
    call = KernelCall("eltwise", (1048576,), "bfloat16")
    assert without.predict(call) == without.predict(KernelCall("copy", (1048576,)))
    rows = synthetic_rows() + [(f"eltwise:{b}:bfloat16", 1, [3 * b / COPY_RATE]) for b in (65536, 1048576, 16777216)]
    with_eltwise = KernelModels.from_rows("new", rows)
    assert with_eltwise.predict(call)[0] == pytest.approx(3 * 1048576 / COPY_RATE, rel=0.05)


@pytest.mark.slow
def test_an_attention_is_its_own_kernel_and_without_a_model_its_products() -> None:
    """The fused attention's cost is not its products' (measured here: bfloat16 backward 9x them), so the
    suite times it; a system whose suite has no attention case sums its GEMMs (two forward, five backward)."""
    assert parse_case("attention_backward:32x64x24:bfloat16") == KernelCall("attention_backward", (32, 64, 24),
                                                                              "bfloat16")
    without = KernelModels.from_rows("old", synthetic_rows())
    forward, backward = KernelCall("attention", (32, 64, 24)), KernelCall("attention_backward", (32, 64, 24))
    assert without.predict(forward)[0] == pytest.approx(gemm_seconds(2048, 64, 24) + gemm_seconds(2048, 24, 64),
                                                        rel=0.2)
    assert len(backward.as_gemms()) == 5 and backward.work() == pytest.approx(2.5 * forward.work())
    slow = 9 * (1e-4 + 2.5 * 4 * 32 * 64 * 64 * 24 / GEMM_RATE)
    rows = synthetic_rows() + [(f"attention_backward:{bh}x{s}x{d}:float32", 1, [9 * (1e-4 + 10.0 * bh * s * s * d /
                                                                                      GEMM_RATE)])
                               for bh, s, d in ((32, 64, 16), (32, 64, 64), (8, 128, 32), (64, 64, 128),
                                                (16, 256, 64), (128, 32, 32))]  # the suite's grid
    with_attention = KernelModels.from_rows("new", rows)
    assert with_attention.predict(backward)[0] == pytest.approx(slow, rel=0.3)
    # six cases: a Gaussian process, and its leave-one-out (refitted on five, its kernel kept) is shown
    (loo,) = [(errors, model) for kind, _, _, errors, model in with_attention.validation() if kind == backward.kind]
    assert loo[1] == "gaussian-process" and len(loo[0]) == 6
    assert with_attention.predict(forward) == without.predict(forward)  # no forward case: still its GEMMs


def test_what_a_prediction_leaves_out_is_said() -> None:
    from caramel.consumers.predict.bykernels import KernelForecast, Overhead
    from caramel.consumers.predict.profile import Profile

    found = KernelForecast(KernelModels.from_rows("old", synthetic_rows()), Overhead(), "t")
    assert found.gaps() == ""
    found.note(Profile([KernelCall("attention", (8, 16, 8))], 3, unmapped={"my_op::fused": 2.0}, source="p.json"))
    found.note(Profile([], 1, unmapped={"my_op::fused": 1.0, "other": 1.0}))
    assert found.unmapped == {"my_op::fused": 2.0, "other": 1.0}
    assert found.gaps() == ("operators no kernel model times (left out, per iteration): my_op::fused x2, other x1; "
                            "no microbenchmark of attention/float32 as GEMMs (run the suite again to add them)")


def test_a_profile_file_lists_its_unmapped_operators(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"kernels": [], "launches": 2, "unmapped": {"x::y": 2}}))
    assert parse_profile(str(path)).unmapped == {"x::y": 2.0}


@pytest.mark.slow
def test_a_kept_profile_captured_by_an_older_walk_is_captured_again(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from caramel.consumers.predict.profile import CAPTURE_FORMAT
    from caramel.payloads.workloads.profile_capture import FORMAT

    assert CAPTURE_FORMAT == FORMAT
    parse_profile(CAPTURED, tmp_path)
    (kept,) = (tmp_path / "profiles").glob("gpt-*.json")
    document = json.loads(kept.read_text())
    old = dict(document, format=1, kernels=[k for k in document["kernels"] if not k["kind"].startswith("attention")])
    kept.write_text(json.dumps(old))
    assert any(c.kind == "attention" for c in parse_profile(CAPTURED, tmp_path).kernels)
    assert json.loads(kept.read_text())["format"] == FORMAT
