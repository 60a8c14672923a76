# Per-chunk CPU and end time of every forked phase (each worker), one scan of vLLM:
#   PYTHONPATH=. python3 benchmarks/results/scan31/chunk_times.py 2> chunk_times_raw.txt
import sys, time, os
import derivgraph.audit.static.evidence as E, derivgraph.audit.static.scan as S, derivgraph.audit.static.tree_facts as T, derivgraph.audit.static.construction as C
import derivgraph.audit.static.forked as F
orig = F.forked_chunks
def timed(work, *a, **k):
    def w(chunk):
        s = time.process_time(); t=time.perf_counter(); r = work(chunk)
        print(f"  pid {os.getpid()} chunk {len(chunk)} cpu {time.process_time()-s:.2f} end {time.perf_counter():.2f}", file=sys.stderr)
        return r
    t0=time.perf_counter(); print("phase start", f"{t0:.2f}", a[:3], file=sys.stderr)
    yield from orig(w, *a, **k)
    print("phase end", f"{time.perf_counter():.2f}", file=sys.stderr)
for m in (E, S, T, C): m.forked_chunks = timed
r = S.scan(package="vllm")
