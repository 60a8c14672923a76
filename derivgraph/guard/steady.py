"""The guard's steady restore entry: ``restore()`` of the steady state as one generated function.

An engine that rebuilds the same objects every reload (vLLM's reload) leaves the guard's watch
the same answer every time: every watched dict at its snapshot length, the raw words of the
dicts' tables suspecting the same items (:meth:`DictSlots.suspects
<derivgraph.dict_slots.DictSlots.suspects>` hands back the same list), each of those holding a
value its template proves tensor-free (:func:`~derivgraph.guard.template.harmless`), so
:meth:`Watch.survey <derivgraph.guard.watch.Watch.survey>` finds nothing and
:meth:`Guard.restore <derivgraph.guard.guard.Guard.restore>` writes only its bookkeeping. Half
its time is the frames between those reads (``restore -> _plan_watched -> survey -> _dirty ->
dirty -> _dirty_whole -> _compared -> _gather -> differing -> _differing -> _mismatches ->
_verdict``). :func:`build` writes that path as one function over the objects the guard holds
now, bound as its globals:

- every object it reads is checked first to be still the guard's (the key: each by identity);
- then every check the library's restore makes (the dicts' lengths and the raw-word suspects,
  read in one call; each suspected item's identity and template; the startup storage where the
  caller did not prove it); any failing: ``return slow(...)``, the library's restore from its
  start (nothing was written, so it decides as if this entry did not exist);
- then the restore's own writes (its report, ``restores``, the claimed set), as the library's.

:meth:`Guard.source <derivgraph.guard.guard.Guard.source>` prints this function: the text is
exactly what runs.
"""

from __future__ import annotations

import operator
import time
from itertools import repeat
from typing import Any

from derivgraph.compiler.codegen import Program
from derivgraph.compiler.generated import define
from derivgraph.guard.holders import MISSING
from derivgraph.guard.report import GuardReport
from derivgraph.guard.template import harmless

__all__ = ["ENABLED", "build"]

#: whether :meth:`Guard.restore <derivgraph.guard.guard.Guard.restore>` builds and runs the
#: steady entry (False: every restore takes the library's path, the reference)
ENABLED = True

NAME = "restore_steady"

#: the bound globals of the generated function, described in its printed header
_DESCRIBED = {
    "guard": "the guard", "watch": "guard.watch", "sweep": "guard.watch.sweep",
    "whole": "sweep.whole (every watched dict, proven whole by its raw words)",
    "gather": "sweep.gathers[whole] (their flat accessor columns)",
    "gather_dicts": "gather.dicts", "lengths": "gather.lengths (their snapshot lengths)",
    "acc": "gather.acc (each column position's accessor)", "slots": "gather.slots (the proof)",
    "templates": "sweep.acc_templates (each accessor's value template, or None)",
    "at": "guard.addresses (the startup tensors at their addresses)",
    "startup": "guard.startup", "guarded": "guard._guarded (the guarded paths)",
    "slow": "Guard._restore_slow (the library's restore)",
}


def build(guard: Any) -> Program | None:
    """The steady restore entry of ``guard`` (a :class:`~derivgraph.guard.guard.Guard`), made
    right after a default restore that found nothing to do; None where the watch is outside
    what the entry covers (the library's restore stays)."""
    watch = guard.watch
    if watch is None or watch.opaque or guard._guarded is None:
        return None
    sweep = watch.sweep
    whole = sweep.whole
    gather = sweep.gathers.get(whole) if whole is not None else None
    if gather is None or gather.slots is None or sweep.tags is not None or sweep.lists:
        return None
    scope: dict[str, Any] = {
        "guard": guard, "watch": watch, "sweep": sweep, "whole": whole, "gather": gather,
        "gather_dicts": gather.dicts, "lengths": gather.lengths, "acc": gather.acc,
        "slots": gather.slots, "templates": sweep.acc_templates, "at": guard._at,
        "startup": guard.startup, "guarded": guard._guarded, "slow": guard._restore_slow,
        "GuardReport": GuardReport, "harmless": harmless, "MISSING": MISSING,
        "perf_counter": time.perf_counter, "is_": operator.is_, "dict_get": dict.get,
        "repeat": repeat,
    }
    src = "\n".join([
        f"def {NAME}(model, *, strict=False, full=False, declared=(), storage_kept=False):",
        '    """guard.restore() in its steady state (nothing rebound, the same items suspected '
        'as last time); else the library\'s restore."""',
        *(f"    {line}" for line in _BODY)]) + "\n"
    fn = define(src, NAME, scope, NAME)
    header = ["# The guard's steady restore entry (derivgraph.guard.steady): what restore() "
              "runs while the engine rebuilds the same objects; else the library's restore.",
              "# Bound when it was made (each checked by identity first):"]
    header += [f"#   {name} = {_DESCRIBED[name]}" for name in _DESCRIBED]
    return Program(NAME, "\n".join(header) + "\n" + src, fn, {}, [])


_SLOW = "return slow(model, strict=strict, full=full, declared=declared, storage_kept=storage_kept)"

_BODY = [
    "start = perf_counter()",
    "# the key: every object bound here is still the guard's (full: the walk, the library's)",
    "if (full or guard.watch is not watch or watch.sweep is not sweep or watch.opaque",
    "        or sweep.whole is not whole or sweep.tags is not None or sweep.lists",
    "        or sweep.gathers.get(whole) is not gather or gather.slots is not slots",
    "        or gather.dicts is not gather_dicts or gather.lengths is not lengths",
    "        or gather.acc is not acc or sweep.acc_templates is not templates",
    "        or guard._at is not at or guard.startup is not startup",
    "        or guard._guarded is not guarded):",
    f"    {_SLOW}",
    "# Sweep._dirty_whole: every watched dict at its snapshot length (else resized: Watch._grown",
    "# may re-base it; read with the tables' heads), every item proven by its raw words but the",
    "# suspects",
    "suspects = slots.suspects()",
    "if slots.resized:",
    f"    {_SLOW}",
    "if suspects is None:  # no proof: _Gather.differing proves again and reads every item",
    f"    {_SLOW}",
    "if suspects:",
    "    columns = gather.columns",
    "    if suspects is not columns[0]:  # other suspects than last time: new columns",
    f"        {_SLOW}",
    "    last, dicts, keys, values = columns  # (last is suspects)",
    "    # _differing, then Sweep._verdict: a suspect not holding its snapshot value must hold",
    "    # one its template proves tensor-free (else its container is dirty: the survey's)",
    "    flags = list(map(is_, map(dict_get, dicts, keys, repeat(MISSING, len(keys))), values))",
    "    i = -1",
    "    for _ in range(flags.count(False)):",
    "        i = flags.index(False, i + 1)",
    "        template = templates[acc[last[i]]]",
    "        if template is None or not harmless(template, dicts[i].get(keys[i], MISSING)):",
    f"            {_SLOW}",
    "# Guard._moved_storage: the startup tensors at their storage, unless the caller proved it",
    "if not storage_kept and not at.intact():",
    f"    {_SLOW}",
    "# every check passed: the survey is NOTHING, no action; the restore's own bookkeeping",
    "report = GuardReport(guarded=list(guarded), weights=len(startup) - len(guarded))",
    "guard._claimed = {}",
    "guard.restores += 1",
    "report.seconds = perf_counter() - start",
    "return report",
]
