"""Aggregate py-spy raw (collapsed) stacks: inclusive and self share of samples per function,
samples per process.   python3 pyspy_agg.py RAW [N]"""
import collections, sys
inc = collections.Counter(); own = collections.Counter(); proc = collections.Counter(); total = 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip().rpartition(" ")
    n = int(n); total += n
    frames = stack.split(";")
    proc[frames[0][:60]] += n
    names = []
    for fr in frames[1:]:
        name = fr.split(" (")[0] + " (" + fr.split(" (")[-1].split(":")[0].replace("/root/.pyenv/versions/3.11.7/lib/python3.11/", "") + ")" if " (" in fr else fr
        names.append(name)
    for name in set(names):
        inc[name] += n
    if names:
        own[names[-1]] += n
N = int(sys.argv[2]) if len(sys.argv) > 2 else 60
print("total", total)
for p, n in proc.most_common(): print(f"proc {n} {p}")
print("== inclusive")
for k, n in inc.most_common(N): print(f"{100 * n / total:5.1f} {k}")
print("== self")
for k, n in own.most_common(N): print(f"{100 * n / total:5.1f} {k}")
