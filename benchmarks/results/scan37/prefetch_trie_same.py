# The prefetch search (a 152-name alternation after "."), plain against the trie, on the files and names
# the vLLM scan hands it (dumped first by prefetch_names.py): same matches, CPU of each.
import re, time, pickle
files, names = pickle.load(open("/tmp/scan37_prefetch_names.pkl", "rb"))
todo = sorted({n for n in names if n and n.isidentifier()})
alt = "|".join(map(re.escape, todo))
dotted = re.compile(rf"\.({alt})\b")
def trie(words):
    tree = {}
    for w in words:
        node = tree
        for ch in w: node = node.setdefault(ch, {})
        node[""] = {}
    def emit(node):
        end = "" in node
        branches = [re.escape(ch) + emit(sub) for ch, sub in sorted(node.items()) if ch]
        if not branches: return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if end else body
    return emit(tree)
dotted2 = re.compile(rf"\.({trie(todo)})\b")
texts = [t for _, t in files]
def bench(name, f, g):
    s=time.process_time(); a=[f(t) for t in texts]; ta=time.process_time()-s
    s=time.process_time(); b=[g(t) for t in texts]; tb=time.process_time()-s
    print(f"{name}: old {ta:.3f} new {tb:.3f} same={a==b}")
bench("dotted", lambda t: [(m.start(), m.end(), m.group(1)) for m in dotted.finditer(t)], lambda t: [(m.start(), m.end(), m.group(1)) for m in dotted2.finditer(t)])
print(len(todo), len(trie(todo)))
