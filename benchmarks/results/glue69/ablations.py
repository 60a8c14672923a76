"""Upper bounds of the session glue's pieces: each ablation removes one piece from this tree's
``vllm_integration`` (not exact: a measurement only), runs ``session_ab.py`` (A = the base
tree, B = this tree with the piece removed) and puts the files back.

    PYTHONPATH=. python3 benchmarks/results/glue69/ablations.py PAIRS NAME [NAME ...]

Names: ``none`` (A against an unchanged B: the null), and the keys of ``ABLATIONS``.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
S, C = "vllm_integration/session.py", "vllm_integration/completion.py"

ABLATIONS: dict[str, list[tuple[str, str, str]]] = {
    # complete()'s bookkeeping: end's outermost close runs the two entries and two counters
    "complete_bookkeeping": [(S, "        return _complete(model, state, session, current_mode())",
                              "        plan, guard = state.plan, state.guard\n"
                              "        r = plan.refill(verify=True, after=guard.addresses)\n"
                              "        guard.restore(model, declared=plan.declared_storages,\n"
                              "                      storage_kept="
                              "plan.holders.after_checked is r)\n"
                              "        state.counters.reloads += 1\n"
                              "        state.counters.moved_last = 0\n"
                              "        return r")],
    # complete()'s second half: the checks' results, the counters' *_last, LastReload, logs
    "complete_second_half": [(C, "    moved = report.moved if report is not None and report.moved "
                                 "else _NONE\n",
                              "    counters.moved_last = 0\n    return report\n"
                              "    moved = report.moved if report is not None and report.moved "
                              "else _NONE\n")],
    # complete()'s three helper calls made inline (check_folds dropped)
    "complete_helpers": [
        (C, "    check_folds(plan, state.witness, mode)  # an engine that folds every load: "
            "strict raises\n", ""),
        (C, "    report = _run_plan(plan, session.layerwise, mode, updated,\n"
            "                       guard.addresses if guard is not None else None)",
         "    report = plan.refill(verify=True, after=guard.addresses)"),
        (C, "    guarded = restore_guard(model, guard, plan, mode, session.kind, kept)",
         "    guarded = guard.restore(model, declared=plan.declared_storages, "
         "storage_kept=kept)")],
    # the three switch reads of the session (begin's and end's mode, complete's spec check)
    "switch_reads": [
        (S, "            mode = current_mode()\n            session = state.session = "
            "Session(kind)", "            mode = 'refill'\n            session = "
            "state.session = Session(kind)"),
        (S, "return _complete(model, state, session, current_mode())",
         "return _complete(model, state, session, 'refill')"),
        (C, "specs = verify_spec_values(plan) if verify_specs_enabled(mode) and len(plan) "
            "else None", "specs = None")],
    # the session lock in begin, note_names and end (5 acquisitions a reload)
    "lock": [(S, "    with _LOCK:\n        session = state.session\n        if session is not "
                 "None and (restart", "    if True:\n        session = state.session\n"
                 "        if session is not None and (restart"),
             (S, "    with _LOCK:\n        (state.session", "    if True:\n        (state.session"),
             (S, "    with _LOCK:\n        session = state.session\n        if layerwise:",
              "    if True:\n        session = state.session\n        if layerwise:")],
    # the loaded names' set and end's closure for the dirty sources
    "names_and_closure": [
        (S, "        (state.session.runtime_names if runtime else state.session.names)"
            ".update(names)", "        pass"),
        (S, "        return _complete(model, state, session, current_mode())",
         "        return complete(model, state, session, current_mode(), None)")],
    # begin / end / note_names / recording / witness_note cut to their bare bookkeeping (no
    # state_for, lock, mode read, checks or names; complete() kept, given "refill")
    "entry_points_minimal": [(S, "\n\n# ---- runtime audit ---", """

def begin(model, kind, *, layerwise=False, restart=False, records=False):  # noqa: F811
    state = model.__dict__[_ATTR].state
    s = state.session
    if s is None:
        s = state.session = Session(kind)
    s.depth += 1
    s.recording |= records
    if layerwise:
        s.layerwise = s.layerwise_open = True


def recording(model):  # noqa: F811
    return model.__dict__[_ATTR].state.session.recording


def note_names(model, names, *, runtime):  # noqa: F811
    pass


def witness_note(model):  # noqa: F811
    return None


def end(model, *, layerwise=False):  # noqa: F811
    state = model.__dict__[_ATTR].state
    s = state.session
    if layerwise:
        s.layerwise_open = False
    s.depth -= 1
    if s.depth > 0:
        return None
    state.session = None
    return complete(model, state, s, "refill", None)


# ---- runtime audit ---""")],
    # state_for by one lookup (an exact variant: no gain measured, not kept)
    "state_for": [(S, '    holder = getattr(model, "__dict__", {}).get(_ATTR)\n'
                      '    return getattr(holder, "state", None)',
                   "    try:\n        return model.__dict__[_ATTR].state\n"
                   "    except (AttributeError, KeyError, TypeError):\n        return None")],
}


def main(pairs: int, names: list[str]) -> None:
    for name in names:
        saved = {p: (ROOT / p).read_text() for p in (S, C)}
        try:
            for path, old, new in ABLATIONS.get(name, []):
                text = (ROOT / path).read_text()
                assert text.count(old) == 1, (name, old)
                (ROOT / path).write_text(text.replace(old, new))
            out = subprocess.run([sys.executable, str(HERE / "session_ab.py"), str(pairs)],
                                 capture_output=True, text=True, cwd=ROOT, check=True).stdout
            print(f"== {name}\n" + "\n".join(out.strip().splitlines()[-3:]), flush=True)
        finally:
            for p, text in saved.items():
                (ROOT / p).write_text(text)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
