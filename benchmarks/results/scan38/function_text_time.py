import time, sys
import derivgraph.audit.static.evidence as E
import derivgraph.audit.static.scan as S
orig = E.function_text
tot = [0.0, 0]
def ft(text, function):
    s = time.perf_counter(); r = orig(text, function); tot[0] += time.perf_counter() - s; tot[1] += 1; return r
E.function_text = ft
S.function_text = ft
import os; P = os.getpid(); S.scan(package="vllm", jobs=int(sys.argv[1]) if len(sys.argv) > 1 else None)
print("parent only" if os.getpid() == P else "", "function_text calls", tot[1], "seconds", round(tot[0], 3))
