"""A trivial system under test driven by MLCommons' LoadGen (mlperf_loadgen), for the submission
tests: real LoadGen output (mlperf_log_summary.txt, mlperf_log_detail.txt, mlperf_log_accuracy.json)
in OUT for one scenario and mode, and in accuracy mode an accuracy.txt as a scoring script prints it.

    python loadgen_sut.py SCENARIO MODE OUT
"""

import os
import sys
import time

import mlperf_loadgen as lg

SAMPLES = 32
SERVICE_SECONDS = 0.002  # each sample "takes" 2 ms, so the short tests meet their minimum duration


def main(scenario: str, mode: str, out: str) -> None:
    os.makedirs(out, exist_ok=True)

    def issue(samples):
        time.sleep(SERVICE_SECONDS * len(samples))
        lg.QuerySamplesComplete([lg.QuerySampleResponse(s.id, 0, 0) for s in samples])

    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(SAMPLES, SAMPLES, lambda s: None, lambda s: None)
    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, scenario)
    settings.mode = getattr(lg.TestMode, mode)
    settings.min_duration_ms = 50
    settings.min_query_count = 64
    settings.offline_expected_qps = 400
    settings.server_target_qps = 50
    settings.single_stream_expected_latency_ns = 2_000_000
    settings.multi_stream_expected_latency_ns = 20_000_000
    log = lg.LogSettings()
    log.log_output.outdir = out
    log.log_output.copy_summary_to_stdout = False
    lg.StartTestWithLogSettings(sut, qsl, settings, log)
    lg.DestroyQSL(qsl)
    lg.DestroySUT(sut)
    if mode == "AccuracyOnly":
        with open(os.path.join(out, "accuracy.txt"), "w") as text:
            text.write('{"exact_match": 100.0, "f1": 100.0}\n')


if __name__ == "__main__":
    main(*sys.argv[1:4])
