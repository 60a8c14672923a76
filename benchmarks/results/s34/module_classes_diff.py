"""Old (text) against new (ast) ``source_tree.module_classes`` on every vLLM 0.33.0 module.

    PYTHONPATH=. python3 benchmarks/results/s34/module_classes_diff.py > benchmarks/results/s34/module_classes_diff.txt
"""
import re
from pathlib import Path

import vllm

from derivgraph.audit.static.readers import ReaderIndex
from derivgraph.audit.static.source_tree import CLASS_NAME, module_classes

_IMPORTED = re.compile(r"\bimport[ \t]*(?:\(([^)]*)\)|([\w, \t]+))")  # the text reader, removed


def old(text: str) -> frozenset[str]:
    names = {n for m in _IMPORTED.finditer(text) for n in CLASS_NAME.findall(m.group(1) or m.group(2))}
    names.update(re.findall(r"^class[ \t]+(\w+)", text, re.M))
    return frozenset(names)


root = Path(vllm.__file__).parent
index = ReaderIndex([], [], lambda name: frozenset())
changed = 0
files = sorted(root.rglob("*.py"))
for f in files:
    text = f.read_text()
    a, b = old(text), module_classes(index, text)
    if a != b:
        changed += 1
        print(f.relative_to(root.parent), "only text:", sorted(a - b), "only ast:", sorted(b - a))
print(f"{changed} of {len(files)} modules differ")
