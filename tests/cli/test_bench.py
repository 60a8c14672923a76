"""``derivgraph bench``: every figure as JSON, with the ratio columns (tiny workloads)."""

from __future__ import annotations

import json

import pytest

from derivgraph.cli import main


def test_bench_prints_every_figure_with_ratios(capsys):
    assert main(["bench", "--workload", "deepseek", "--layers", "2", "--repeat", "2",
                 "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    for key in ("naive", "pass", "selective", "refill", "refill_host", "refill_host_cpu",
                "post_load_refill", "pass_captured_plan", "graph", "graph_serial",
                "graph_alone"):
        assert result[f"{key}_ms"] > 0, key
        assert result["min_ms"][key] <= result[f"{key}_ms"]
    assert result["derived"] == 2 * 8 + 8  # 2 MoE layers x 8, 8 drafter K/V stacks
    assert result["naive_over_pass"] == round(result["naive_ms"] / result["pass_ms"], 2)
    assert result["post_load_refill_over_post_load"] == round(
        result["post_load_refill_ms"] / result["naive_ms"], 2)
    assert result["floor_ms"] is None  # CPU: no HBM floor
    assert result["naive_over_graph_serial"] == round(
        result["naive_ms"] / result["graph_serial_ms"], 2)


def test_bench_scaling_reports_compile_against_construction(capsys):
    assert main(["bench", "--workload", "scaling", "--sizes", "40", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["sizes"][0]
    assert row["derived"] == 40 and row["nodes"] == 81
    assert row["compile_over_construct"] == pytest.approx(  # ratio of the unrounded times
        row["compile_warm_s"] / row["construct_s"], rel=0.2)
    # the young collection after the compile is added to it, not hidden
    assert row["compile_with_gc_s"] == pytest.approx(
        row["compile_warm_s"] + row["gc_after_s"], abs=2e-4)
    assert row["gc_young_objects"] >= row["derived"] // 2  # 3 of 4 per layer: a tensor


def test_bench_scaling_counts_the_containers_the_compile_leaves(monkeypatch):
    """``gc_young_objects`` counts what the compile keeps for the next young collection: a
    compile planted to keep 5000 more containers moves it by about that many."""
    import derivgraph.planner as planner
    from derivgraph.tools.bench_scaling import scaling_bench

    clean = scaling_bench((40,))["sizes"][0]["gc_young_objects"]
    compile_plan = planner.compile_plan

    def keeps_more(*args, **kwargs):
        plan = compile_plan(*args, **kwargs)
        plan.planted = [[] for _ in range(5000)]
        return plan

    monkeypatch.setattr(planner, "compile_plan", keeps_more)
    planted = scaling_bench((40,))["sizes"][0]["gc_young_objects"]
    # (the clean compile's own count moves by a few objects with the process's caches)
    assert planted - clean >= 4500


def test_bench_times_the_eager_pass_of_a_plan_never_captured(monkeypatch):
    """``pass`` is the eager run of a plan that is never captured (on CPU the flat program);
    ``pass_captured_plan`` the eager run of the captured plan (the recordable program)."""
    from derivgraph.runtime.plan import Plan
    from derivgraph.tools.bench import bench

    seen: list[tuple[bool, bool]] = []  # (this plan was captured, the flat program ran)
    run = Plan.run

    def run_spy(self, *args, **kwargs):
        if not args and not kwargs:  # full runs only (not selective ones)
            seen.append((self._recording is not None, ".index_copy_(" in self.program.source))
        return run(self, *args, **kwargs)

    monkeypatch.setattr(Plan, "run", run_spy)
    result = bench("cpu", "reference", repeat=2, layers=16)  # enough layers for flat groups
    assert result["pass_ms"] > 0 and result["pass_captured_plan_ms"] > 0
    never = [flat for captured, flat in seen if not captured]
    assert never == [True] * 4  # both plans' first runs, then the 2 timed passes: flat
    after = [flat for captured, flat in seen if captured]
    assert len(after) == 2 * 3 and not any(after)  # pass_captured_plan, graph, graph_serial
