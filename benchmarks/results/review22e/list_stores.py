"""List every attribute store (x.a = ..., x.a[...] = ..., setattr, register_*, replace_parameter)
in the v16 drawn files of the installed vLLM, in drawn order, so no store is skipped by eye."""
import ast, json, sys
from pathlib import Path
import vllm
SITE = Path(vllm.__file__).resolve().parent.parent
draw = json.load(open("tests/resources/static_recall_file_v16_draw.json"))["drawn"]
only = set(sys.argv[1:])
for i, rel in enumerate(draw, 1):
    if only and str(i) not in only:
        continue
    src = (SITE / rel).read_text()
    lines = src.splitlines()
    tree = ast.parse(src)
    out = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            ts = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in ts:
                for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    base = e.value if isinstance(e, ast.Subscript) else e
                    if isinstance(base, ast.Attribute):
                        targets.append((e.lineno, ast.unparse(base)))
        elif isinstance(node, ast.Call):
            f = ast.unparse(node.func)
            if f.split(".")[-1] in ("setattr", "register_buffer", "register_parameter", "replace_parameter"):
                targets.append((node.lineno, f + "(" + ", ".join(ast.unparse(a) for a in node.args[:2]) + ")"))
        out += targets
    print(f"== {i} {rel} ({len(lines)} lines, {len(out)} stores)")
    for ln, t in sorted(set(out)):
        print(f"  {ln}: {t}")
