"""How many lazy derived nodes a full compile of the stamped scaling workload makes."""
import sys, time
from derivgraph.planner import compile_plan
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec
from derivgraph.compiler.stamp import stamping
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
with stamping(True):
    t = time.process_time()
    plan = compile_plan(scaling_model(n), [scaling_spec()])
    print("cpu", time.process_time() - t)
nodes = plan.graph.nodes
print("len", len(nodes), "lazy", len(nodes.records), "made", nodes._made, "spans", len(nodes._spans))
