#!/bin/bash
# Each mutation of _startup_tensors, planted then reverted; the new tests must go red.
# usage (from the worktree root): bash benchmarks/results/startaddr77/mutations.sh
f=derivgraph/runtime/storage.py
run() {
  cp $f /tmp/sa77_orig.py
  python3 - "$f" "$2" "$3" <<'PY'
import sys
p, old, new = sys.argv[1:]
s = open(p).read(); assert s.count(old) == 1, old; open(p, 'w').write(s.replace(old, new))
PY
  r=$(PYTHONPATH=$PWD /work/venv/bin/python3 -m pytest -q -p no:cacheprovider \
      tests/runtime/test_startup_tensors_columns.py tests/runtime/test_keeps_startup_columns.py 2>&1 | tail -1)
  cp /tmp/sa77_orig.py $f
  echo "$1: $r"
}
run "rest entries not filtered by the mask" "for i in _zeros(taken) if mask[i]]" "for i in _zeros(taken)]"
run "rest entries not read" "    deque(map(setitem, repeat(storages), rest, map(_STORAGE, rest_entries)), 0)" "    pass"
run "unrecorded column taken (ptrs None not skipped)" "if column.ptrs is not None]" "]"
run "columns' rows left unmarked as taken" '        taken[span] = b"\x01" * len(column.ptrs)' "        pass"
run "column rows not compressed by the mask" "return list(compress(storages, mask)), list(compress(ptrs, mask))" "return [s for s in storages if s is not None], [p for p in ptrs if p is not None]"
run "check made without rows" "            held = self._startup = AtAddresses(*_startup_tensors(entries, mask, rows))" "            held = self._startup = AtAddresses(*_startup_tensors(entries, mask))"
