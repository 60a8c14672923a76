set -u
run() {
  cp "$1" /tmp/e76_mut_backup
  /work/venv/bin/python3 - "$1" "$2" "$3" <<'PY'
import sys
p,old,new=sys.argv[1:]
s=open(p).read(); assert s.count(old)>=1, old; open(p,'w').write(s.replace(old,new,1))
PY
  r=$(PYTHONPATH=. timeout 600 /work/venv/bin/python3 -m pytest -q tests/runtime/test_holders_table_rows.py 2>&1 | tail -1)
  echo "$4: $r"
  cp /tmp/e76_mut_backup "$1"
}
run derivgraph/runtime/holders.py "if span is None or record[0].entries is not rows or" "if span is None or" "H1 no proof that the rows are the column's own list"
run derivgraph/runtime/holders.py "known = {} if table is None or len(table) != len(entries) else" "known = {} if table is None else" "H2 no proof that the entries are the table's"
run derivgraph/runtime/holders.py "                or 1 in taken[span]:" "                or False:" "H3 no check of rows already taken"
run derivgraph/runtime/plan.py "Holders(model, by_id, self.entries)" "Holders(model, by_id)" "H4 the plan's holders without the table"
