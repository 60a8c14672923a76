"""Plant each bug, run the new tests (and the derived-columns ones), expect red, revert."""
import subprocess
import sys

MUTATIONS = [
    ("rows: no ids check", "derivgraph/compiler/columns.py",
     "return kept[1] if kept is not None and kept[0] == ids else None",
     "return kept[1] if kept is not None else None"),
    ("fill: last column left out", "derivgraph/compiler/columns.py",
     "        for ids, values in pending:\n            self.update(zip(ids, values))",
     "        for ids, values in pending[:-1]:\n            self.update(zip(ids, values))"),
    ("__missing__: no fill", "derivgraph/compiler/columns.py",
     "        if not self._pending:\n            raise KeyError(key)",
     "        if True:\n            raise KeyError(key)"),
    ("get: the dict's own", "derivgraph/compiler/columns.py",
     "        if self._pending and not _CONTAINS(self, key):\n            self.fill()\n"
     "        return _GET(self, key, default)",
     "        return _GET(self, key, default)"),
    ("take: no fill on a miss", "derivgraph/compiler/columns.py",
     "        if self._pending and any(map(is_, found, repeat(None))):",
     "        if False:"),
    ("_column: shared kept row not read", "derivgraph/compiler/columns.py",
     "                    env.get(arg.id)", "                    pass"),
    ("fill_derived: the wrong input column", "derivgraph/compiler/columns.py",
     "                inputs = table.column(j)", "                inputs = table.column(k)"),
    ("_tensor_values: by id", "derivgraph/planner.py",
     "found = values.take(ids) if type(values) is ColumnValues else",
     "found = values.take(ids) if False else"),
    ("row_values: by id", "derivgraph/compiler/columns.py",
     "    kept = values.rows(ids) if type(values) is ColumnValues else None",
     "    kept = None"),
    ("_operands: sources put in by id", "derivgraph/compiler/columns.py",
     "            if column and type(env) is ColumnValues:",
     "            if False:"),
    ("CompileValues.run: in", "derivgraph/planner.py",
     "            if dict.__contains__(env, node_id):", "            if node_id in env:"),
    ("_evaluate_all: no fill before the full walk", "derivgraph/planner.py",
     "        if rest is None:  # the walk reads", "        if False:  # the walk reads"),
]
TESTS = ["tests/compiler/test_column_values.py", "tests/compiler/test_derived_columns.py",
         "tests/compiler/test_column_operand_stacks.py"]
for name, path, old, new in MUTATIONS:
    src = open(path).read()
    assert src.count(old) == 1, name
    open(path, "w").write(src.replace(old, new))
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            *TESTS], capture_output=True, text=True)
    finally:
        open(path, "w").write(src)
    last = r.stdout.strip().splitlines()[-1]
    print(f"{'RED ' if r.returncode else 'GREEN'} {name}: {last}", flush=True)
