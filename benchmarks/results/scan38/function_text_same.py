"""evidence.function_text against b0a20a6's (every def/class header searched for the name) on
every file of vLLM 0.33.0 and of the standard library: each header's name, each ``Class.method``
(a class with each later header name), absent and odd names; one digest of all answers.
    cd TREE && PYTHONPATH=TREE python3 benchmarks/results/scan38/function_text_same.py"""
import hashlib, re, sys, sysconfig, time
from pathlib import Path
from derivgraph.audit.static.evidence import function_text

_DEF = re.compile(r"(?:def|class)[ \t]+(\w+)")

def old(text: str, function: str) -> str:  # b0a20a6
    parts = function.split(".")
    pos, indent = 0, -1
    for part in parts:
        found = None
        for m in _DEF.finditer(text, pos):
            start = text.rfind("\n", 0, m.start()) + 1
            head = text[start:m.start()]
            if m.group(1) == part and head.strip(" \t") in ("", "async") and len(head) > indent:
                found = (start, len(head))
                break
        if found is None:
            return ""
        pos, indent = found
    end = re.compile(rf"^[ \t]{{0,{indent}}}(?![)\]])\S", re.M).search(text, text.find("\n", pos) + 1)
    return text[pos:end.start() if end else len(text)]

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
