"""List every audit finding in the file of v14's one miss (fused_moe_modular_method.py)."""
from derivgraph.audit.static.scan import scan

F = "vllm/model_executor/layers/fused_moe/fused_moe_modular_method.py"
for f in sorted(scan(package="vllm").findings, key=lambda f: f.line):
    if f.file == F:
        print(f.line, f.attr, f.severity.value, "declared" if f.declared else "", "|", f.reason)
print("end of findings in", F)
