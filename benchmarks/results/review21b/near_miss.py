"""Findings of any severity and any attr within 10 lines of each v15b miss (read after the measure).

    PYTHONPATH=. python3 benchmarks/results/review21b/near_miss.py > benchmarks/results/review21b/near_miss.out
"""
from derivgraph.audit.static.scan import scan

fs = scan(package="vllm").findings
M = "vllm/model_executor/kernels/linear/mixed_precision/marlin.py"
W = "vllm/model_executor/layers/quantization/inc/schemes/inc_wna16_moe.py"
print("# Findings of any severity and any attr within 10 lines of each miss "
      "(the audit's output, read after the measure).")
for f, line, attr in [(M, 177, "data"), (W, 185, "unpermuted_row_to_permuted_row"),
                      (W, 208, "router_weight_ones")]:
    near = [x for x in fs if x.file == f and abs(x.line - line) <= 10]
    same_attr = [x for x in fs if x.file == f and x.attr == attr]
    print(f"== miss {f}:{line} {attr}")
    print(f"   findings within 10 lines (any attr): {len(near)}")
    for x in near:
        print(f"     {x.line} {x.attr} {x.severity.value}{' declared' if x.declared else ''}: {x.reason}")
    print(f"   findings anywhere in the file with attr {attr!r}: "
          f"{[(x.line, x.severity.value) for x in same_attr]}")
for f, line, attr in [(W, 111, "unpermuted_row_to_permuted_row"), (W, 112, "router_weight_ones")]:
    hits = [(x.line, x.attr, x.severity.value) for x in fs if x.file == f and abs(x.line - line) <= 3]
    print(f"== the PWAL reset {f}:{line} {attr}: {hits}")
