"""Dump :func:`.backend_branches.owners` (enum, each class's backends and last mention) and
:func:`.selection.backend_order` of every vLLM 0.33.0 module that branches on a backend, on
whichever derivgraph tree PYTHONPATH names (the regex reading of 29893d9, the ast one of mend34).
The raw test spans are left out: only ``backend_order`` reads them."""
import json
import sys

import derivgraph.audit.static.backend_branches as bb
import derivgraph.audit.static.selection as sel
from derivgraph.audit.static.readers import ReaderIndex
from derivgraph.audit.static.sources import collect_files

files = [(f.display, f.path.read_text()) for f in collect_files(package="vllm")]
index = ReaderIndex(files, (), lambda c: frozenset({c}))
out = {}
for shown, text in files:
    got = bb.owners(index, text)
    if got is not None:
        enum, owner, _ = got
        out[shown] = [enum, {c: [sorted(b), at] for c, (b, at) in owner.items()},
                      list(sel.backend_order(index, text))]
json.dump(out, sys.stdout, indent=1, sort_keys=True)
