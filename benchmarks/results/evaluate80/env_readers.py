"""Who reads the compile's values (``_evaluate_all``'s env) at a stamped row's op or derived
tensor id, after ``_evaluate_all`` (argv[1] layers): a counting dict subclass stands in for
the env (its lookups go through Python, so C-level sweeps are counted too), by reading
function and by the template position kind."""
import collections
import sys

import derivgraph.compiler.interpret as interp_mod
import derivgraph.planner as pl
from derivgraph.tools.bench_scaling import scaling_model, scaling_spec

layers = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
counts: collections.Counter = collections.Counter()
watch: set = set()
on = [False]


class CountingEnv(dict):
    def _note(self, key):
        if on[0] and key in watch:
            f = sys._getframe(2)
            counts[(f.f_code.co_name, f.f_code.co_filename.rsplit("/", 1)[-1])] += 1

    def __getitem__(self, key):
        self._note(key)
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        self._note(key)
        return dict.get(self, key, default)

    def __contains__(self, key):
        self._note(key)
        return dict.__contains__(self, key)


orig_init = interp_mod.Interpreter.__init__


def init(self, graph):
    orig_init(self, graph)
    self.env = CountingEnv()


interp_mod.Interpreter.__init__ = init
orig_eval = pl._evaluate_all


def evaluate_all(graph, sources=None, book=None):
    env = orig_eval(graph, sources, book)
    from derivgraph.compiler.layers import closed_layers
    for table in closed_layers(graph):
        for k in range(len(table.template)):
            watch.update(table.column(k))
    on[0] = True
    return env


pl._evaluate_all = evaluate_all
pl.compile_plan(scaling_model(layers), [scaling_spec()])
on[0] = False
print(f"{layers} layers; stamped row ids watched: {len(watch)}")
for (fn, file), n in counts.most_common():
    print(f"{n:8d}  {file}:{fn}")
