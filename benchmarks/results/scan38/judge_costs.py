"""Per-finding CPU of the evidence pass's judge, serial (--jobs 1), in the order the pass runs
them; per file summed, to see how the cost is spread and whether a cheap estimate predicts it.
    cd TREE && PYTHONPATH=TREE python3 benchmarks/results/scan38/judge_costs.py"""
import collections, time
import derivgraph.audit.static.evidence as E
import derivgraph.audit.static.scan as S

costs = []
orig = E._judge_all
def _judge_all(judge, index, todo, jobs):
    def timed(f):
        c = time.process_time(); r = judge(f); costs.append((f.file, f.attr, time.process_time() - c)); return r
    c = time.process_time()
    out = orig(timed, index, todo, jobs)
    print("judge_all cpu", round(time.process_time() - c, 2), "judged", len(costs))
    return out
E._judge_all = _judge_all
S.scan(package="vllm", jobs=1)
per = collections.defaultdict(lambda: [0, 0.0])
for f, a, c in costs:
    per[f][0] += 1; per[f][1] += c
tot = sum(c for *_, c in costs)
print("total judge cpu", round(tot, 2), "files", len(per))
top = sorted(per.items(), key=lambda kv: -kv[1][1])
for f, (n, c) in top[:25]:
    print(f"{c:7.3f} {n:3d} {f}")
print("top findings:")
for f, a, c in sorted(costs, key=lambda x: -x[2])[:25]:
    print(f"{c:7.3f} {a} {f}")
import statistics
xs = [n for n, c in per.values()]; ys = [c for n, c in per.values()]
print("corr(findings per file, cost)", round(statistics.correlation(xs, ys), 3))
