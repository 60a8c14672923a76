set -u
run() { # file, python-replace-old, new, label
  cp "$1" /tmp/e76_mut_backup
  /work/venv/bin/python3 - "$1" "$2" "$3" <<'PY'
import sys
p,old,new=sys.argv[1:]
s=open(p).read(); assert s.count(old)>=1, old; open(p,'w').write(s.replace(old,new,1))
PY
  r=$(PYTHONPATH=. timeout 600 /work/venv/bin/python3 -m pytest -q tests/runtime/test_keeps_startup_columns.py tests/runtime/test_keeps_startup.py 2>&1 | tail -1)
  echo "$4: $r"
  cp /tmp/e76_mut_backup "$1"
}
run derivgraph/runtime/entry_columns.py "self.kept = False  # no row" "self.kept = True  # no row" "M1 alias column records kept=True"
run derivgraph/runtime/entry_columns.py "            self.kept = True  # every row's startup data set, just now" "            pass" "M2 entry column (lazy-alias branch) records nothing"
run derivgraph/runtime/entry.py "    rest = _zeros(taken)" "    rest = []" "M3 keeps_startup reads no rest entry"
run derivgraph/runtime/entry.py "self._rows = () if ids is None or len(ids) != len(self._by_id)" "self._rows = () if ids is None" "M4 set_columns without the ids length proof"
run derivgraph/runtime/entry.py "    return span if ids[span] == rows else None" "    return span" "M5 span_of without the equality proof"
run derivgraph/runtime/entry.py "    if zeros * 64 > len(marks):" "    if zeros * 64 > len(marks) and False:" "M6a _zeros always by find (control: should stay green)"
run derivgraph/runtime/entry.py "        at = marks.find(0, at + 1)" "        at = marks.find(0, at + 2)" "M6 _zeros find skips one"
run derivgraph/runtime/storage.py "                entries, () if self._table is None else self._table.rows)" "                entries, ())" "M7 startup check without rows (control: green, only slower)"
git status --short
