"""evidence.function_text against b0a20a6's (every def/class header searched for the name) on
every file of vLLM 0.33.0 and of the standard library: each header's name, each ``Class.method``
(a class with each later header name), absent and odd names; one digest of all answers.
    cd TREE && PYTHONPATH=TREE python3 benchmarks/results/scan38/function_text_same.py BASE
(BASE: a git archive of b0a20a6, whose evidence.py is the old side)."""
import hashlib, importlib.util, re, sys, sysconfig, time
from pathlib import Path
from derivgraph.audit.static.evidence import function_text

_DEF = re.compile(r"(?:def|class)[ \t]+(\w+)")


def _base_function_text(base: str):
    """``function_text`` as a base tree's evidence.py has it (a git archive of b0a20a6)."""
    spec = importlib.util.spec_from_file_location(
        "base_evidence", Path(base) / "derivgraph/audit/static/evidence.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.function_text


old = _base_function_text(sys.argv[1])
import vllm
roots = [Path(vllm.__file__).parent, Path(sysconfig.get_paths()["stdlib"])]
h_old, h_new = hashlib.sha256(), hashlib.sha256()
n = files = 0; t_old = t_new = 0.0
for root in roots:
    for path in sorted(root.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        files += 1
        heads = [m.group(1) for m in _DEF.finditer(text)]
        classes = [m.group(1) for m in re.finditer(r"class[ \t]+(\w+)", text)]
        names = heads[::3] + [f"{c}.{h}" for c in classes[:4] for h in heads[1::max(len(heads) // 8, 1)]] + \
            ["", "absent_name", "x.", ".x", "<lambda>", "a.b.c", "__init__.__init__", "ab cd"]
        if heads:
            names.append(f"{heads[0]}.{heads[-1]}.{heads[len(heads) // 2]}")
        for name in names:
            s = time.perf_counter(); a = old(text, name); t_old += time.perf_counter() - s
            s = time.perf_counter(); b = function_text(text, name); t_new += time.perf_counter() - s
            n += 1
            h_old.update(f"{path}|{name}|{a}".encode()); h_new.update(f"{path}|{name}|{b}".encode())
            if a != b:
                print("DIFF", path, name); sys.exit(1)
print(f"files {files} calls {n} same: {h_old.hexdigest() == h_new.hexdigest()} digest {h_new.hexdigest()[:16]}")
print(f"seconds: old {t_old:.2f} new {t_new:.2f}")
