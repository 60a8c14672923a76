"""Where the evidence pass's workers repeat each other's work: cProfile of each forked worker's
judge (base split) and of the serial judge (--jobs 1); functions whose summed worker time most
exceeds the serial time.   cd TREE && PYTHONPATH=TREE python3 benchmarks/results/scan38/evidence_repeat_profile.py"""
import cProfile, os, pstats, sys
import derivgraph.audit.static.evidence as E
import derivgraph.audit.static.scan as S

mode = sys.argv[1] if len(sys.argv) > 1 else "driver"
if mode == "driver":
    for m in ("serial", "forked"):
        os.system(f"{sys.executable} {__file__} {m}")
    def load(paths):
        st = pstats.Stats(paths[0])
        for p in paths[1:]:
            st.add(p)
        return {f"{k[0].rsplit('/', 1)[-1]}:{k[2]}": v[3] for k, v in st.stats.items()}
    ser = load(["/tmp/ev_serial.prof"])
    wk = load(sorted(f"/tmp/{p}" for p in os.listdir("/tmp") if p.startswith("ev_worker_")))
    print("serial judge cum", round(max(ser.values()), 2), "workers", round(max(wk.values()), 2))
    rows = sorted(((wk.get(k, 0) - ser.get(k, 0), k) for k in set(wk) | set(ser)), reverse=True)
    for d, k in rows[:40]:
        print(f"{d:7.3f}  serial {ser.get(k, 0):6.3f} workers {wk.get(k, 0):6.3f}  {k}")
    for p in os.listdir("/tmp"):
        if p.startswith("ev_worker_") or p == "ev_serial.prof":
            os.remove(f"/tmp/{p}")
    sys.exit()

orig = E._judge_all
def _judge_all(judge, index, todo, jobs):
    def profiled(f):
        prof = getattr(profiled, "prof", None)
        if prof is None:
            prof = profiled.prof = cProfile.Profile()
            import atexit
            path = "/tmp/ev_serial.prof" if mode == "serial" else f"/tmp/ev_worker_{os.getpid()}.prof"
            def dump():
                prof.dump_stats(path)
            if mode == "serial":
                atexit.register(dump)
            else:
                os.register_at_fork  # workers exit through os._exit: dump after each finding
                profiled.dump = dump
        prof.enable()
        try:
            return judge(f)
        finally:
            prof.disable()
            if mode != "serial":
                profiled.dump()
    return orig(profiled, index, todo, jobs)
E._judge_all = _judge_all
S.scan(package="vllm", jobs=1 if mode == "serial" else 2)
