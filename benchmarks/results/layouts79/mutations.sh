#!/bin/bash
# Each planted bug in derivgraph/column_layout.py must turn the book's tests red.
cd "$(dirname "$0")/../../.."
F=derivgraph/column_layout.py
TESTS="tests/runtime/test_book_fresh_columns.py tests/runtime/test_column_layout.py tests/runtime/test_book_template_first.py"
run() {
  cp $F /tmp/layouts79_mut.bak
  /work/venv/bin/python3 - "$2" "$3" <<'PY'
import sys
p = "derivgraph/column_layout.py"; s = open(p).read(); old, new = sys.argv[1], sys.argv[2]
assert s.count(old) == 1, old
open(p, "w").write(s.replace(old, new))
PY
  res=$(PYTHONPATH=$PWD timeout 600 /work/venv/bin/python3 -m pytest -q -p no:cacheprovider $TESTS 2>&1 | tail -1)
  cp /tmp/layouts79_mut.bak $F
  echo "$1: $res"
}
run "loose entries not laid over the runs" "if self._loose and not self._loose.keys().isdisjoint(ids):" "if False:"
run "every add taken as fresh" "fresh = fresh or not self._log" "fresh = True"
run "one tensor: the first fresh column's record, unsearched" "            if at >= 0:
                return layout" "            return layout"
run "no fresh column's start noted" "                self._starts[id(tensors[0])] = len(self._log)" "                pass"
run "a few tensors no run answered left None" "                    out[i] = self._record(tensors[i])" "                    out[i] = None"
run "a run's record not placed (left to the table)" "                    out[run] = [layout] * len(column)" "                    out[run] = [None] * len(column)"
run "the id words made once, a later fresh column never" "        self._words = (words, len(self._log))" "        self._words = (words, 10**9)"
run "truth: always empty" "        return any(len(tensors) for tensors, _, _ in self._log)" "        return False"
