"""The vLLM reload benchmark's split of back-to-back reloads by the arm of the reload before
each (``by_previous``, ``steady_state_delta_us``, ``carry_us`` of
:mod:`vllm_integration.reload_bench`): a reload's cost depends on what the one before it left
in the caches, so each timed reload is filed under its predecessor's arm."""

from __future__ import annotations

import pytest

from vllm_integration.reload_bench import _by_previous


def test_each_reload_is_filed_under_the_arm_before_it() -> None:
    # the bench's two-arm order for four rounds, after a warm-up ending with the plugin arm
    sequence = [("off", 5.0), ("refill", 5.4), ("refill", 5.5), ("off", 5.1),
                ("refill", 5.3), ("off", 5.2), ("off", 4.9), ("refill", 5.6)]
    out = _by_previous(sequence, "refill", "refill")
    assert out["by_previous"] == {
        "off after off": {"n": 1, "median_ms": 4.9},
        "off after refill": {"n": 3, "median_ms": 5.1},
        "refill after off": {"n": 3, "median_ms": 5.4},
        "refill after refill": {"n": 1, "median_ms": 5.5},
    }
    assert out["steady_state_delta_us"] == pytest.approx(600.0)  # 5.5 - 4.9 ms
    assert out["steady_state_ratio"] == pytest.approx(5.5 / 4.9, abs=1e-4)
    assert out["carry_us"] == pytest.approx(200.0)  # 5.1 - 4.9 ms


def test_the_first_reload_is_filed_under_the_warm_up_arm() -> None:
    out = _by_previous([("off", 5.0)], "off", "refill")
    assert out["by_previous"] == {"off after off": {"n": 1, "median_ms": 5.0}}


def test_figures_need_their_transitions() -> None:
    # strictly alternating: no plugin reload after a plugin reload, no off after an off
    out = _by_previous([("off", 5.0), ("refill", 5.4), ("off", 5.1), ("refill", 5.3)],
                       "refill", "refill")
    assert "steady_state_delta_us" not in out and "carry_us" not in out
    assert "steady_state_ratio" not in out
    assert sum(v["n"] for v in out["by_previous"].values()) == 4


def test_other_arms_are_kept_apart() -> None:
    out = _by_previous([("hooks_only", 5.2), ("off", 5.0), ("off", 4.8)], "off", "refill")
    assert out["by_previous"]["off after hooks_only"] == {"n": 1, "median_ms": 5.0}
    assert out["by_previous"]["hooks_only after off"] == {"n": 1, "median_ms": 5.2}
    assert "carry_us" not in out  # no off reload after a refill one


def _result(on_on: float, off_off: float, repeat: int = 1001) -> dict:
    return {"mode": "refill", "repeat": repeat, "by_previous": {
        "refill after refill": {"n": 250, "median_ms": on_on},
        "off after off": {"n": 250, "median_ms": off_off}}}


def test_the_verdict_is_the_median_of_each_process_steady_state() -> None:
    from vllm_integration.reload_bench import judge
    out = judge([_result(5.25, 5.0), _result(5.3, 5.0), _result(5.2, 5.0), _result(5.6, 5.0)])
    assert out["ratios"] == [1.05, 1.06, 1.04, 1.12]
    assert out["median"] == pytest.approx(1.055)  # (1.05 + 1.06) / 2
    assert out["complete"] and not out["met"]
    met = judge([_result(5.2, 5.0), _result(5.25, 5.0), _result(5.1, 5.0), _result(5.9, 5.0)])
    assert met["median"] == pytest.approx(1.045) and met["met"]


def test_a_short_or_small_sample_is_reported_not_judged() -> None:
    from vllm_integration.reload_bench import judge
    assert not judge([_result(5.0, 5.0)] * 3)["complete"]  # three processes
    short = judge([_result(5.0, 5.0)] * 3 + [_result(5.0, 5.0, repeat=151)])
    assert short["median"] == 1.0 and not short["complete"] and not short["met"]
    lacking = judge([_result(5.0, 5.0)] * 3 + [{"mode": "refill", "repeat": 1001,
                                               "by_previous": {}}])
    assert lacking["ratios"] == [1.0, 1.0, 1.0] and not lacking["complete"]


def test_a_probe_that_ran_once_is_summarised() -> None:
    # --pieces: a rare path's probe may fire once in a whole run; its summary is that value
    from vllm_integration.reload_bench import _summary
    assert _summary([12.34]) == {"median": 12.3, "q10": 12.3, "min": 12.3}
    assert _summary([1.0, 2.0, 3.0, 4.0, 5.0]) == {"median": 3.0, "q10": 1.4, "min": 1.0}
