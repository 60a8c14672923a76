"""CPU seconds of a fixed pure-Python loop: run alone, then two copies at once, to see whether
two busy processes on the 2 vCPUs slow each other (shared core/cache): python3 smt_probe.py"""
import time

c = time.process_time()
d = {}
for i in range(6_000_000):
    d[i & 0xFFFF] = str(i)
print(f"cpu={time.process_time() - c:.2f}")
