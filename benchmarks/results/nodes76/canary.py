"""Plant one mutation in a copy of ir.py, run the held-node tests there, restore.

The copy: ``tar --exclude=.git -cf - . | (cd /tmp/n76/mut && tar xf -)`` from the worktree.
usage: python3 canary.py [NAME ...]"""

import shutil
import subprocess
import sys

SRC = "/work/wt/nodes76/derivgraph/compiler/ir.py"
DST = "/tmp/n76/mut/derivgraph/compiler/ir.py"
MUTS = {
    "swap": ("return run.columns[at % k], at // k",
             "return run.columns[at // k % k], at % k"),
    "order": ("        for run in self._held:\n"
              "            parts += [own[at:run.before], run.ids]\n"
              "            at = run.before\n"
              "        parts.append(own[at:])",
              "        parts.append(own)\n"
              "        parts += [run.ids for run in self._held]"),
    "nocache": ("found = self._made[node_id] = column.node(row)", "found = column.node(row)"),
    "index": ("self._index = dict(zip(self.ids, range(len(self.ids))))",
              "self._index = dict(zip(self.ids, range(1, len(self.ids) + 1)))"),
    "disjoint": ("return dict.keys(nodes).isdisjoint(other) and \\\n"
                 "            all(run.id_set.isdisjoint(other) for run in nodes._held)",
                 "return dict.keys(nodes).isdisjoint(other)"),
    "column": ("            if node is None or made:\n", "            if True:\n"),
    "check": ("            raise ValueError(\"the ids are the columns' ids a row at a time\")",
              "            pass"),
}
TESTS = ["tests/compiler/test_held_node_map.py", "tests/compiler/test_held_users.py",
         "tests/compiler/test_held_nodes.py", "tests/compiler/test_fresh_ids.py"]
for name in sys.argv[1:] or MUTS:
    a, b = MUTS[name]
    s = open(SRC).read()
    assert s.count(a) == 1, (name, s.count(a))
    open(DST, "w").write(s.replace(a, b))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                        *TESTS], cwd="/tmp/n76/mut", capture_output=True, text=True,
                       env={"PYTHONPATH": "/tmp/n76/mut", "PATH": "/work/venv/bin:/usr/bin:/bin"})
    lines = r.stdout.strip().splitlines()
    failed = [line for line in lines if line.startswith("FAILED")]
    print(name, "rc", r.returncode, lines[-1] if lines else r.stderr[-300:], failed[:2],
          flush=True)
shutil.copy(SRC, DST)
