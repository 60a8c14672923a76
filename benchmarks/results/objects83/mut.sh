#!/bin/bash
# each mutation planted in derivgraph/adoption_columns.py, the new test (and the adoption
# tests) run, then reverted; every line must say RED
f=derivgraph/adoption_columns.py
run() {  # name, python replace old, new
  cp $f /tmp/o83_keep.py
  python3 - "$2" "$3" <<'PY'
import sys
p = "derivgraph/adoption_columns.py"; s = open(p).read(); old, new = sys.argv[1], sys.argv[2]
assert s.count(old) == 1, old
open(p, "w").write(s.replace(old, new))
PY
  if PYTHONPATH=$PWD /work/venv/bin/python3 -m pytest -q -x tests/compiler/test_shared_column_lists.py \
      tests/compiler/test_adoption_columns.py tests/compiler/test_adoption_held.py \
      tests/compiler/test_adoption_reading.py > /tmp/o83_mut.txt 2>&1; then r=GREEN; else r=RED; fi
  cp /tmp/o83_keep.py $f
  echo "$r  $1  ($(tail -1 /tmp/o83_mut.txt))"
}
run "paths copied again" "return held, held.paths, held.input_values()" "return held, list(held.paths), held.input_values()"
run "owners copied again" "            return self.found
" "            return list(self.found)
"
run "ids: the table's copy" "return nodes.ids if type(nodes) is HeldDerived else ids" "return ids"
run "owners of the last column rotated" "            return self.found
" "            return self.found[1:] + self.found[:1]
"
run "ids: another held column's" "return nodes.ids if type(nodes) is HeldDerived else ids" "return nodes.ids[::-1] if type(nodes) is HeldDerived else ids"
run "paths: reversed" "return held, held.paths, held.input_values()" "return held, held.paths[::-1], held.input_values()"
git diff --stat -- $f
