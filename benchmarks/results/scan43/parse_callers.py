import time, collections, ast, sys
import derivgraph.audit.static.scan as S
stats = collections.defaultdict(lambda: [0, 0.0, 0, set()])
orig_parse = ast.parse
def parse(src, filename="<unknown>", *a, **k):
    t = time.perf_counter()
    r = orig_parse(src, filename, *a, **k)
    d = time.perf_counter() - t
    f = sys._getframe(1); g = f.f_back
    key = f"{f.f_code.co_filename.rsplit('/',1)[-1]}:{f.f_code.co_name} <- {g.f_code.co_filename.rsplit('/',1)[-1]}:{g.f_code.co_name}"
    s = stats[key]; s[0] += 1; s[1] += d; s[2] += len(src); s[3].add(hash(src))
    return r
ast.parse = parse
t = time.process_time()
S.scan(package="vllm", jobs=1)
print("cpu", time.process_time() - t)
for k, v in sorted(stats.items(), key=lambda kv: -kv[1][1]):
    print(f"{v[0]:6d} distinct={len(v[3]):6d} {v[1]:.3f}s {v[2]//1000:6d}kB  {k}")
