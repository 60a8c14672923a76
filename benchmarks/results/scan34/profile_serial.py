"""cProfile of one serial (jobs=1) scan of vLLM, top functions by own time and by cumulative
time: PYTHONPATH=<tree> python3 benchmarks/results/scan34/profile_serial.py"""
import cProfile
import pstats

import derivgraph.audit.static.scan as S

prof = cProfile.Profile()
prof.enable()
S.scan(package="vllm", jobs=1)
prof.disable()
st = pstats.Stats(prof)
st.sort_stats("tottime").print_stats(25)
st.sort_stats("cumulative").print_stats(45)
