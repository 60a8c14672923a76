"""Peak memory of a cold CLI scan, base and this tree alternating: the parent's peak RSS
(``/usr/bin/time -f %M``, the largest of the parent and any one waited child) and the peak of the
summed RSS of the parent and its live workers (sampled every 50 ms from /proc).
    python3 benchmarks/results/scan31/memory.py N BASE > benchmarks/results/scan31/memory.txt"""
import os, subprocess, sys, time


def tree_rss(top: int) -> int:
    """The summed RSS (bytes) of ``top`` and its descendants, from /proc."""
    parent: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    tree, grew = {top}, True
    while grew:
        more = {p for p, pp in parent.items() if pp in tree} - tree
        grew, tree = bool(more), tree | more
    total = 0
    for p in tree:
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
    return total

n, base = int(sys.argv[1]), sys.argv[2]
here = os.getcwd()
for pair in range(1, n + 1):
    for name, tree in (("base", base), ("scan31", here)):
        env = dict(os.environ, PYTHONPATH=tree)
        load = os.getloadavg()[0]
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "derivgraph.cli",
                                 "audit", "static", "--package", "vllm", "--format", "json",
                                 "-o", "/dev/null"], cwd=tree, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, tree_rss(proc.pid))
            time.sleep(0.05)
        maxrss_kb = int(proc.stderr.read().strip().splitlines()[-1])
        print(f"{name} pair={pair} load={load:.2f} time_M_kB={maxrss_kb} "
              f"peak_tree_rss_MB={peak / 2**20:.0f}", flush=True)
