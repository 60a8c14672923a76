# Check that the refactor of _scan_v13b/_scan_v13c (one _built_stores) keeps every per-file key.
# Run with the pre-refactor script (git show 6454275:tests/resources/static_recall_outside_draw.py)
# saved as tests/resources/_review17_old_draw_tmp.py (it must sit there: SPECS is found from it).
import importlib.util, sys
sys.path.insert(0, "tests/resources")
def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
old = load("old", "tests/resources/_review17_old_draw_tmp.py"); new = load("new", "tests/resources/static_recall_outside_draw.py")
for m in (old, new): m.TENSOR_ONLY = True
root = new._vllm_root(); nb = nc = 0
for path in sorted(root.rglob("*.py")):
    rel = "vllm/" + path.relative_to(root).as_posix()
    if not rel.startswith(new.V13_SCOPES): continue
    a = (old._scan_v13b(path, rel), old._scan_v13c(path, rel)); b = (new._scan_v13b(path, rel), new._scan_v13c(path, rel))
    assert a == b, rel
    nb += len(a[0]); nc += len(a[1])
print("identical per-file v13b/v13c keys over V13_SCOPES (before earlier-pool removal):", nb, nc)
