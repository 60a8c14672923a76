"""A: the plan's small accessor tables watched by dict tags (hops, sources, holders); B: swept
directly (no tags) when under 64 items."""
import derivgraph.runtime.holders as H, derivgraph.runtime.accessors as A
orig_h, orig_a = H.watch_items, A.watch_items
def small_none(dicts, outside):
    if len(dicts) < 64:
        return None
    return orig_h(dicts, outside)
saved = None
def use(arm, plan, model):
    global saved
    h = plan.holders
    if saved is None:
        saved = (h.hops.watch, h.table.watch, h._source_watch)
    if arm == "A":
        H.watch_items, A.watch_items = orig_h, orig_a
        h.hops.watch, h.table.watch, h._source_watch = saved
        for w in saved:
            if w is not None:
                w.settle()
    else:
        H.watch_items, A.watch_items = small_none, small_none
        h.hops.watch = h.table.watch = h._source_watch = None
