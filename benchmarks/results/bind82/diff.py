import pstats, sys
def load(p):
    out = {}
    for f,(cc,nc,tt,ct,_) in pstats.Stats(p).stats.items():
        k = (f[0].split("derivgraph/")[-1], 0, f[2]); out[k] = (nc, tt, ct)
    return out
a, b = load(sys.argv[1]), load(sys.argv[2]); thr = float(sys.argv[3]) if len(sys.argv) > 3 else 0.003
rows = []
for k in set(a) | set(b):
    x, y = a.get(k, (0,0,0)), b.get(k, (0,0,0))
    if abs(y[2]-x[2]) >= thr or abs(y[1]-x[1]) >= thr: rows.append((y[2]-x[2], k, x, y))
for d, k, x, y in sorted(rows, key=lambda r: r[0]):
    print(f"{d*1000:+8.1f} cum  tt {x[1]*1000:6.1f}->{y[1]*1000:6.1f}  cum {x[2]*1000:6.1f}->{y[2]*1000:6.1f} n {x[0]}->{y[0]}  {k[0]}:{k[1]}({k[2]})")
