# Dump the files and names of the vLLM scan's one prefetch call (for prefetch_trie_same.py).
import pickle
import derivgraph.audit.static.readers as R
import derivgraph.audit.static.scan as S
orig = R.ReaderIndex.prefetch
calls = []
def pf(self, names):
    names = list(names); calls.append(names)
    if len(calls) == 1:
        pickle.dump((list(self.files), names), open("/tmp/scan37_prefetch_names.pkl", "wb"))
    return orig(self, names)
R.ReaderIndex.prefetch = pf
S.scan(package="vllm")
print(len(calls), [len(c) for c in calls][:10])
