import pstats, re, sys
st = pstats.Stats(sys.argv[1]).stats; pat = re.compile(sys.argv[2])
for func, (cc, nc, tt, ct, callers) in st.items():
    name = f"{func[0]}:{func[1]}({func[2]})"
    if not pat.search(name): continue
    print(f"== {name} tottime {tt:.4f} cum {ct:.4f} n {nc}")
    for caller, v in sorted(callers.items(), key=lambda kv: -kv[1][3]):
        if v[3] >= 0.001:
            print(f"   tt {v[2]:.4f} cum {v[3]:.4f} {v[1]} calls  {caller[0].split('/')[-1]}:{caller[1]}({caller[2]})")
