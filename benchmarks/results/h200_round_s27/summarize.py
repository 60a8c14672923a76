"""Print the figures of BENCHMARKS.md's fifth-session table from this folder's raw JSON."""
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(p):
    try:
        return json.loads((HERE / p).read_text())
    except (OSError, ValueError):
        return None


def ds(tag, d):
    if d:
        print(f"{tag:22s} graph/floor {d['graph_over_floor']:.2f} naive/graph {d['naive_over_graph']:.1f} "
              f"refill_host {d['refill_host_ms']:.3f} ms (cpu {d['refill_host_cpu_ms']:.3f}) "
              f"postload+refill/postload {d['post_load_refill_over_post_load']:.2f}")


ds("round deepseek cuda", load("round/bench_deepseek_cuda.json"))
for side in ("new", "base"):
    for i in (1, 2):
        ds(f"sbs {side} {i}", load(f"sbs/ds_cuda_{side}_{i}.json"))
for tag, p in [("round ref hostcpu", "round/bench_reference_hostcpu.json"),
               ("round ds hostcpu", "round/bench_deepseek_hostcpu.json")] + [
        (f"sbs ref cpu {s} {i}", f"sbs/ref_cpu_{s}_{i}.json") for s in ("new", "base") for i in (1, 2)]:
    d = load(p)
    if d:
        print(f"{tag:22s} naive/pass {d['naive_over_pass']:.1f} postload+refill/postload "
              f"{d['post_load_refill_over_post_load']:.2f} refill_host {d['refill_host_ms']:.3f} ms")
for tag, p in [("round scaling", "round/scaling_hostcpu.json")] + [
        (f"sbs scaling {s} {i}", f"sbs/scaling_{s}_{i}.json") for s in ("new", "base") for i in (1, 2)]:
    d = load(p)
    if d:
        rows = d.get("rows") or d.get("sizes") or d
        print(tag, json.dumps(rows)[:400])
for s in ("new", "base"):
    for i in (1, 2):
        d = load(f"sbs/phases_100k_{s}_{i}.json2")
        if d:
            print(f"phases 100k {s} {i}", {k: v for k, v in d.items() if not isinstance(v, (dict, list))})
for i in (1, 2, 3):
    d = load(f"round/first_refill_cuda_{i}.json")
    if d:
        print(f"first refill {i}", {k: v for k, v in d.items() if not isinstance(v, list)})
