"""Values built only on the first post-load run, as references to the layer's kept tensors.

A post-load step may build its kernel's config only once:

    is_weight_update = self.moe_kernel is not None
    ...
    if not is_weight_update:
        self._init_moe_kernel(layer)   # sets self.moe_kernel, stores self.moe_quant_config

A reload reruns the step but not the builder, so the stored container keeps what the first run
put in it. When its builder hands on only references to the layer's attributes (``layer.w13_bias``,
``getattr(layer, "swiglu_alpha", None)``: no arithmetic, no conversion), those are the kept
parameters, which both reload paths refill in place: the container is not stale and moves no
storage. :func:`first_run_guard` tells the guard and :func:`references_only` the builder.

A call under a test that only the initial load passes also runs on no reload:
``INITIAL_LOAD_TESTS`` names them (vLLM 0.33's ``is_weights_pre_processed()``, true only inside
``weights_already_processed()``, which only the weight cache IPC loader enters, around the
post-load step of the model it builds).
"""

from __future__ import annotations

import ast
import re
import textwrap

from derivgraph.audit.static.def_text import def_end
from derivgraph.audit.static.walk import walk

__all__ = ["INITIAL_LOAD_TESTS", "first_run_guard", "references_only"]

INITIAL_LOAD_TESTS = frozenset({"is_weights_pre_processed"})
"""Predicates true only while the model is first built (never during a reload)."""

_IF_NOT = re.compile(r"^([ \t]*)if[ \t]+not[ \t]+(\w+)[ \t]*:")
_IF_NONE = re.compile(r"^([ \t]*)if[ \t]+self\.(\w+)[ \t]+is[ \t]+None[ \t]*:")
_IF_INITIAL = re.compile(r"^[ \t]*if[ \t]+(?:[\w.]+\.)?(\w+)\(\)[ \t]*:")
_INITIAL = "<initial load>"


def first_run_guard(function: str, class_text: str) -> str | None:
    """``self.Y`` when every call of ``self.<function>(`` in ``class_text`` sits under
    ``if self.Y is None:`` or ``if not V:`` with ``V = self.Y is not None`` bound before it (or
    under an initial-load test, ``INITIAL_LOAD_TESTS``), and ``function`` itself sets
    ``self.Y``; else None."""
    calls = [m.start() for m in re.finditer(rf"\bself\.{re.escape(function)}\(", class_text)]
    head = re.search(rf"^[ \t]*def[ \t]+{re.escape(function)}\(", class_text, re.M)
    if not calls or head is None:
        return None
    guards = set()
    for at in calls:
        if head.start() <= at < def_end(class_text, head.start()):
            return None  # a recursive call
        guard = _enclosing_first_run_test(class_text, at)
        if guard is None:
            return None
        guards.add(guard)
    guards.discard(_INITIAL)
    if len(guards) != 1:
        return None
    (attr,) = guards
    own = class_text[head.start():def_end(class_text, head.start())]
    if not re.search(rf"^[ \t]*self\.{attr}[ \t]*=(?!=)", own, re.M):
        return None
    return f"self.{attr}"


def _enclosing_first_run_test(text: str, at: int) -> str | None:
    """The attribute ``Y`` of the nearest enclosing ``if`` at ``at`` when it is a first-run test
    (``if self.Y is None:``, or ``if not V:`` with ``V = self.Y is not None`` above it)."""
    line_start = text.rfind("\n", 0, at) + 1
    indent = at - line_start
    before = text[:line_start].splitlines()
    for i in range(len(before) - 1, -1, -1):
        line = before[i]
        own = len(line) - len(line.lstrip(" \t"))
        if not line.strip() or own >= indent:
            continue
        if line.lstrip().startswith("def "):
            return None
        initial = _IF_INITIAL.match(line)
        if initial and initial.group(1) in INITIAL_LOAD_TESTS:
            return _INITIAL
        none = _IF_NONE.match(line)
        if none:
            return none.group(2)
        neg = _IF_NOT.match(line)
        if neg:
            bound = re.compile(rf"^[ \t]*{neg.group(2)}[ \t]*=[ \t]*self\.(\w+)[ \t]+is[ \t]+not"
                               r"[ \t]+None\b", re.M)
            hits = bound.findall("\n".join(before[:i]))
            return hits[-1] if hits else None
        indent = own
    return None


def references_only(builder_text: str) -> bool:
    """Whether every ``return`` of the builder is a call whose arguments are references: an
    attribute chain of an argument (``layer.w13_bias``), ``getattr(layer, "x", <constant>)``,
    a constant, or a local bound once to one of those."""
    try:
        func = ast.parse(textwrap.dedent(builder_text)).body[0]
    except (SyntaxError, IndexError):
        return False
    if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    params = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}
    params.discard("self")
    bound: dict[str, list[ast.expr]] = {}
    for node in walk(func):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
    returns = [n for n in walk(func) if isinstance(n, ast.Return)]
    if not returns:
        return False

    def reference(e: ast.expr, depth: int = 0) -> bool:
        if isinstance(e, ast.Constant):
            return True
        if isinstance(e, ast.Attribute):
            root = e
            while isinstance(root, ast.Attribute):
                root = root.value
            return isinstance(root, ast.Name) and root.id in params
        if (isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "getattr"
                and len(e.args) in (2, 3) and not e.keywords
                and isinstance(e.args[0], ast.Name) and e.args[0].id in params
                and all(isinstance(a, ast.Constant) for a in e.args[1:])):
            return True
        if isinstance(e, ast.Name) and depth == 0 and len(bound.get(e.id, [])) == 1:
            return reference(bound[e.id][0], 1)
        return False

    for ret in returns:
        call = ret.value
        if not isinstance(call, ast.Call):
            return False
        if not all(reference(a) for a in (*call.args, *(k.value for k in call.keywords))):
            return False
    return True
