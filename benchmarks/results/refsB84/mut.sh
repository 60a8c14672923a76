#!/bin/bash
# each mutation planted, the new test (+ the neighbours) run, then reverted; expect RED for each
cd "$(dirname "$0")/../../.."
T="tests/runtime/test_shared_source_lists.py tests/compiler/test_shared_column_lists.py"
run() {  # name file python-replacement
  python3 - "$2" "$3" "$4" <<'PY'
import sys
p, old, new = sys.argv[1:]
s = open(p).read(); assert s.count(old) == 1, old; open(p, "w").write(s.replace(old, new))
PY
  if PYTHONPATH=$PWD /work/venv/bin/python3 -m pytest -q -x $T >/dev/null 2>&1; then r=GREEN; else r=RED; fi
  echo "$1: $r"; git checkout -q -- "$2"
}
run "copy: _head slices always" derivgraph/runtime/holders.py "    return rows if len(rows) == n else rows[:n]" "    return rows[:n]"
run "copy: written is a copy of the order" derivgraph/compiler/lower.py "                    self._written = self._order" "                    self._written = list(self._order)"
run "copy: set_all makes lists again" derivgraph/compiler/graph.py "            self.metas = Same(value, len(self.ids))" "            self.metas = [value] * len(self.ids)"
run "value: bound addresses rotated" derivgraph/runtime/holders.py "    return _head(reads.ptrs, n)" "    return _head(reads.ptrs[1:] + reads.ptrs[:1], n)"
run "value: bound paths from the wrong list" derivgraph/runtime/holders.py "            paths = _head(reads.paths, n)" "            paths = _head(reads.paths[::-1], n)"
run "value: written handed out uncopied" derivgraph/compiler/lower.py "self._order)))
        return list(self._written)" "self._order)))
        return self._written"
run "value: Same one row short" derivgraph/compiler/graph.py "        return repeat(self.value, self.n)" "        return repeat(self.value, self.n - 1)"
run "value: Same index out of range not raised" derivgraph/compiler/graph.py "        range(self.n)[i]  # noqa" "        # range(self.n)[i]  # noqa"
run "value: set_all meta sets the device" derivgraph/compiler/graph.py "            self.metas = Same(value, len(self.ids))" "            self.devices = Same(value, len(self.ids))"
