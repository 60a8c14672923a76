"""Dump every pool of tests/resources/static_recall_outside_draw.py (all 11 lists) as JSON.

usage: python3 dump.py DRAW_SCRIPT TENSOR_ONLY(0|1) OUT.json  (run from the repo root; vLLM installed)
The lead ran it on d647e9b's script (as draw_old.py) and on 0c94179's, both modes, and compared
the outputs with cmp: identical. *.log: the pool sizes and CPU seconds of each run (2026-12-02 22:0x UTC, load 3-8)."""
import importlib.util, json, sys, time
path, flag, out = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
spec = importlib.util.spec_from_file_location("draw", path); m = importlib.util.module_from_spec(spec)
sys.modules["draw"] = m
spec.loader.exec_module(m)
m.TENSOR_ONLY = flag
t = time.process_time()
p = m.pools(m.ALL_LISTS)
json.dump({k: v for k, v in p.items()}, open(out, "w"))
print(out, {k: len(v) for k, v in p.items()}, f"{time.process_time()-t:.1f} s cpu")
