"""Dump what the class-body readers give on every top-level class of vLLM 0.33.0, on whichever
derivgraph tree PYTHONPATH names (base 29893d9 or mend34), to compare the regex and ast readings:
each class's selector bindings (attribute, selector module's file, selector), the classes it
selects for no attribute and for each attribute it hands as ``kw=self.<attr>``, and each
module's backend owners (:func:`.backend_branches.owners`)."""
import ast
import inspect
import json
import re
import sys

import derivgraph.audit.static.backend_branches as bb
import derivgraph.audit.static.selection as sel
from derivgraph.audit.static.readers import ReaderIndex
from derivgraph.audit.static.sources import collect_files

files = [(f.display, f.path.read_text()) for f in collect_files(package="vllm")]
index = ReaderIndex(files, (), lambda c: frozenset({c}))
where = {t: shown for shown, t in files}
new = "found" in inspect.signature(sel.selected_classes).parameters
out: dict = {"bindings": {}, "selected": {}, "owners": {}}
for shown, text in files:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        continue
    for node in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        cls = node.name
        if new:
            found = bb.bound_selectors(index, text, cls)
        else:
            found = bb.bound_selectors(index, text, sel.class_body(text, cls))
        key = f"{shown}::{cls}"
        if found:
            out["bindings"][key] = [[a, where[m], f] for a, m, f in found]
        attrs = [""] + sorted(set(re.findall(r"\w[ \t]*=[ \t]*self\.(\w+)[ \t]*(?=[,)\n])",
                                             ast.get_source_segment(text, node) or "")))
        for attr in attrs:
            got = (sel.selected_classes(index, text, cls, tuple(found), attr) if new
                   else sel.selected_classes(index, text, cls, attr))
            if got:
                out["selected"][f"{key}::{attr}"] = sorted(got)
    got = bb.owners(index, text)
    if got is not None:
        enum, owner, tested = got
        out["owners"][shown] = [enum, {c: [sorted(b), at] for c, (b, at) in owner.items()},
                                sorted(tested)]
json.dump(out, sys.stdout, indent=1, sort_keys=True)
