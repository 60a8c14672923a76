"""The closed-row proof on one built stamped 100k graph: the base rule (every row node's users
counted against the template's, ``94492ed``'s ``closed_layers``, copied below) against this
tree's (rows opened by the calls that touched them), alternating, 7 rounds. Both give the same
tables.

    PYTHONPATH=TREE python3 open_ab.py
"""

import gc
import time
from itertools import repeat

from derivgraph.compiler import layers
from derivgraph.compiler.bind import match_specs
from derivgraph.compiler.build import build_graph
from derivgraph.compiler.instances import aligned_rows
from derivgraph.compiler.stamp import stamping
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

spec, model = scaling_spec(), scaling_model(25000)
gc.disable()
with stamping(True):
    graph = build_graph(model, match_specs(model, [spec]))


def base() -> list:
    """94492ed's closed_layers, uncached (its _closed_users, _users_as_template and
    _users_differ inlined)."""
    users, nodes = graph.ir.users, graph.nodes
    found = []
    for table in graph.stamps:
        template = table.template
        if not template or not table.rows or not layers._closed(graph, template):
            continue
        total = sum(len(users[t]) for t in template)
        size = len(template)
        keep = aligned_rows(nodes, table)
        n = len(table.rows)
        if all(list(map(len, map(users.get, table.column(k), repeat((), n))))
               == [len(users[t])] * n for k, t in enumerate(template)):
            keep = [ok and len(set(row)) == size for ok, row in zip(keep, table.rows)]
        else:
            keep = [ok and len(set(row)) == size
                    and sum(map(len, map(users.__getitem__, row))) == total
                    for ok, row in zip(keep, table.rows)]
        closed = table if all(keep) else table.subset(keep)
        if closed.rows:
            found.append(closed)
    return found


def mine() -> list:
    graph.layer_cache = (-1, None)
    return layers.closed_layers(graph)


a, b = base(), mine()
assert [t.rows for t in a] == [t.rows for t in b] and len(b[0].rows) == 24999
res: dict[str, list[float]] = {"users counted (base)": [], "rows touched (mine)": []}
for _ in range(7):
    for label, fn in zip(res, (base, mine)):
        t = time.process_time()
        fn()
        res[label].append(time.process_time() - t)
for k, v in res.items():
    print(f"{k:22s} median {sorted(v)[3]:.3f}  all {[round(x, 3) for x in v]}")  # noqa: T201
print("touched", len(graph.touched), "rows", len(b[0].rows))  # noqa: T201
