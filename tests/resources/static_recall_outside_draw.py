"""Draw the outside review's held-out recall candidates from the installed vLLM's source.

    PYTHONPATH=. python3 tests/resources/static_recall_outside_draw.py > candidates.json

Three text-search rules over vLLM's own source (``ast`` only; the static audit is not used):

- ``pwal``: an attribute store (``obj.attr = expr``, tuple targets included) in a function named
  ``process_weights_after_loading`` or in a same-file function it calls (transitively, by name).
- ``lazy``: in any function other than ``__init__``, an ``if <obj>.attr is None:`` whose body
  stores ``<obj>.attr = expr`` (a cache built on first use).
- ``loader``: an attribute store in a function named ``load_weights`` / ``post_load_weights``,
  or in ``__init__`` of a class whose name contains ``Experts``, ``Kernel`` or ``Prepared``.

The stored expression must not be a literal (``None``, a number, a string, a bool) nor a bare
argument of the enclosing function passed through; everything else is a candidate, tensor or
not. The pool of
each list is sorted by (file, line, attr); ``random.Random(seed + k).sample`` picks ``n`` from
list k (0, 1, 2). Seed and n are read from static_recall_outside_seed.json, committed first.
Each candidate is then judged by reading the source (real derived-tensor site or not) in
static_recall_outside_v1_vllm_0.33.json, before the audit is run on it.

``--tensor-only`` (stage v2, seed in static_recall_outside_seed_v2.json, committed after v1
gave 1 and 2 real sites in the lazy and loader lists): keep only candidates in model code
(``model_executor/``, ``models/``, ``v1/attention/``, ``v1/spec_decode/``,
``v1/worker/gpu/spec_decode/``) whose stored expression builds a tensor (a ``torch.*`` or
``ops.*`` call, or a tensor method such as ``contiguous``/``to``/``t``/``view``/``stack``) or
whose target name reads like a tensor (weight, scale, bias, stride, workspace, lock, alpha,
cache, packed, norm).

``--seed-file`` names another committed seed file and ``--exclude`` drops the candidates of
earlier lists from the pools (stage v3, the second outside review).

``--lists`` (stage v8, the eighth outside review) names the lists to draw; the default is the
three above, so earlier draws reproduce unchanged. Three more lists cover classes of store that
the first three miss; a key already in an earlier list of ``ALL_LISTS`` (in that order) is left
out of a later one, so each new list holds only stores the old rules do not reach:

- ``pwal_calls``: a call ``<obj>.register_buffer(name, v)``, ``<obj>.register_parameter(name,
  v)``, ``setattr(obj, name, v)`` or ``replace_parameter(obj, name, v)`` (any receiver) in the
  functions that ``pwal`` scans. The key is the call's line and the name argument (the string,
  or the source text of a non-literal name).
- ``pwal_xfile``: the stores of both kinds above (attribute stores and store calls) in
  functions of OTHER vLLM files that those functions call, resolved by name through the file's
  imports (``from m import f`` then ``f(...)``, ``import m as x`` / ``from pkg import m`` then
  ``x.f(...)``, relative imports included; a called imported class resolves to its
  ``__init__``), and in the same-file callees of the resolved function, transitively by name.
- ``lazy2``: in any function other than ``__init__``, a cache built on first use behind a guard
  other than the single ``<obj>.attr is None`` of ``lazy``: ``not hasattr(obj, "attr")``,
  ``getattr(obj, "attr", d) is None`` / ``not getattr(...)``, ``not obj.attr``, ``obj.attr is
  None`` inside ``and``/``or``, or ``k not in obj.attr``; the body stores ``obj.attr`` (an
  attribute store, an ``obj.attr[k] = v`` store or ``setattr(obj, "attr", v)``). The early-return
  form counts too: ``if <guard on obj.attr>: return ...`` (``obj.attr is not None``,
  ``hasattr(obj, "attr")``, ``k in obj.attr``, ``obj.attr``) followed, later in the same block,
  by such a store.

A seed file may carry ``n_by_list`` (list name -> n) to override ``n`` for some lists (v8:
the whole rest of ``pwal``, fewer of each new list). The stored value obeys the same literal /
passed-through-argument exclusion and, under ``--tensor-only``, the same scope and tensor
filter (on the value and the name).

Stage v10 adds one list, after the others in ``ALL_LISTS`` (so it holds no key of an earlier
list), for the receivers and speculators the stage-v8 lists do not reach:

- ``recv_spec``: (a) the stores of both kinds in methods of OTHER vLLM files reached through a
  call receiver: a call ``<recv>.m(...)`` (``recv`` not an imported module) in the functions
  that ``pwal`` scans or in ``load_weights`` / ``post_load_weights`` and their same-file callees
  (transitively, by name), resolved to method ``m`` (not ``__init__``) of each class that the
  file imports by name (``from m import C``, relative imports included) and defined in
  another file, with that method's same-file callees, transitively by name (base classes are
  not followed); (b) the stores of both kinds in every function other than ``__init__`` of
  the worker-side speculator files (``v1/spec_decode/``, ``v1/worker/gpu/spec_decode/``:
  ``load_model``, weight sharing, graph setup and per-step code alike).

Stage v12 adds one list, after the others in ``ALL_LISTS`` (so it holds no key of an earlier
list), for tensors set up from loaded weights outside ``process_weights_after_loading``:

- ``setup_hooks``: the stores of both kinds in (a) the setup hooks, i.e. every function other
  than ``__init__``, ``forward`` and PWAL whose name holds one of ``SETUP_NAMES``
  (``load_model``, ``load_draft_model``, ``finalize``, ``post_init``, ``post_load``,
  ``after_load``, ``postprocess``, ``post_process``) or that takes an argument named ``model``,
  ``target_model``, ``draft_model`` or ``drafter`` (a method that receives a loaded model),
  with their same-file callees, transitively by name, and the methods of other files' classes
  they reach through a call receiver (resolved as in ``recv_spec`` (a)); (b) first-call
  initialisation behind a flag: in a function other than ``__init__``, the body of ``if not
  obj.f`` / ``if obj.f is None`` / ``if obj.f is False`` / ``if obj.f == False`` stores an
  attribute other than ``f``; (c) weight-derived stores anywhere else: an attribute store whose
  value reads a weight-like attribute (``weight``, ``bias``, ``data``, ``*_weight``,
  ``*_scale``, ``*_bias``) or enumerates parameters (``named_parameters()``, ``parameters()``,
  ``state_dict()``, ``get_parameter()``), in a function other than ``__init__``, ``forward``,
  ``apply``, ``__call__``, ``create_weights`` and PWAL.
Stage v13 adds one list, after the others in ``ALL_LISTS`` (so it holds no key of an earlier
list), for tensor stores that the spec library does not declare, in classes earlier lists
under-sampled:

- ``undeclared_derived``: the stores of both kinds (attribute stores, tuple targets included,
  and store calls) (a) in every function, ``__init__`` included, of the CPU-offload, LoRA and
  compilation code (``V13_WHOLE``: ``model_executor/offloader/``, ``lora/``, ``compilation/``,
  ``model_executor/custom_op.py``); (b) anywhere in the scope plus the worker, sampler and LoRA
  code (``V13_SCOPES``), ``__init__`` included, when the stored value reads a weight-like
  attribute or enumerates parameters (the test of ``setup_hooks`` (c), which left out
  constructors and the worker); (c) anywhere in ``V13_SCOPES`` when the stored value is, or
  unpacks, the return of a helper whose name holds a ``HELPER_WORDS`` word (``pack``,
  ``prepare``, ``convert``, ``shuffle``, ``swizzle``, ``reorder``, ``permute``, ``transform``,
  ``interleave``, ``quantize``, ``fuse``, ``gather``, ``tie``). Under ``--tensor-only`` the
  literal / argument exclusion and the tensor filter apply unchanged, and the scope is
  ``V13_SCOPES`` for this list only: earlier lists still scan ``SCOPES`` alone, so their draws
  reproduce. Then a candidate leaves the pool when a spec in ``specs/*.yaml`` declares its
  attribute (``_spec_declared``: the derived ``name``s; the generic names ``weight``,
  ``scale``, ``alpha``, ``beta`` and list indices count only inside a class the spec targets).
  The output gives this list a ``drawn_order`` (the positions of the sorted candidates in the
  order ``sample`` drew them), so judging a prefix of it is a random subsample.
Stage v13b adds one more list, after ``undeclared_derived`` (so it holds no key of v1-v13's
pools), because v13's draw held no real site: its whole-file scans drew LoRA slots and
compile-pass objects, and its constructor stores were ``.data`` rebinds and tied weights made
before loading. The new list keeps only stores that build a new tensor from a weight after
construction:

- ``built_from_weights``: in ``V13_SCOPES``, in any function other than ``__init__`` and
  ``create_weights``, a store of either kind (attribute store, tuple targets included, or store
  call) whose value both reads a weight-like attribute or enumerates parameters (the test of
  ``setup_hooks`` (c)) and builds a tensor: a ``torch.*`` / ``ops.*`` call, a
  ``TENSOR_METHODS`` method or a ``HELPER_WORDS`` helper. Stores of ``data`` and
  ``weight_loader`` are left out. The literal / argument exclusion, the tensor filter and the
  declared-by-spec removal are those of ``undeclared_derived``; the output gives a
  ``drawn_order`` too.
Stage v13c adds one more list, after ``built_from_weights`` (pool 1, not seeded), for tensors
built from weights that reach the store through a name rather than a weight attribute: objects
built after loading from tensors passed in (runtimes, configs, descriptors) and weight reads
bound to locals first:

- ``built_from_args``: in ``V13_SCOPES``, in any function other than ``create_weights``, a
  store of either kind whose value builds a tensor from a tensor name: a ``TENSOR_METHODS``
  method called on it, or a ``torch.*`` / ``ops.*`` / ``HELPER_WORDS`` call taking it as a
  positional argument (inside a list, tuple or comprehension too). A tensor name is an argument
  of the function annotated ``Tensor`` / ``Parameter`` or named like a weight (holding
  ``weight``, ``scale``, ``bias``, ``param`` or ``tensor``, or ``w``, ``w1``, ``w13``-like), or
  a local bound in the function to a value that reads a weight (the ``setup_hooks`` (c) test).
  ``self`` and ``cls`` are not tensor names. Stores of ``data`` and ``weight_loader`` are left
  out; the literal / argument exclusion, the tensor filter and the declared-by-spec removal
  are those of ``undeclared_derived``; the output gives a ``drawn_order``.
"""

from __future__ import annotations

import ast
import functools
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

HERE = Path(__file__).resolve().parent
LISTS = ("pwal", "lazy", "loader")
NEW_LISTS = ("pwal_calls", "pwal_xfile", "lazy2")
V10_LISTS = ("recv_spec",)
V12_LISTS = ("setup_hooks",)
V13_LISTS = ("undeclared_derived", "built_from_weights", "built_from_args")
ALL_LISTS = LISTS + NEW_LISTS + V10_LISTS + V12_LISTS + V13_LISTS
SPEC_WORKER = ("vllm/v1/spec_decode/", "vllm/v1/worker/gpu/spec_decode/")


def _vllm_root() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent


def _targets(node: ast.stmt) -> list[ast.Attribute]:
    if isinstance(node, ast.Assign):
        out: list[ast.Attribute] = []
        for t in node.targets:
            elts = t.elts if isinstance(t, ast.Tuple) else [t]
            out += [e for e in elts if isinstance(e, ast.Attribute)]
        return out
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
        return [node.target]
    return []


def _literal(value: ast.expr | None) -> bool:
    if value is None or isinstance(value, ast.Constant):
        return True
    return isinstance(value, ast.UnaryOp) and isinstance(value.operand, ast.Constant)


SCOPES = ("vllm/model_executor/", "vllm/models/", "vllm/v1/attention/", "vllm/v1/spec_decode/",
          "vllm/v1/worker/gpu/spec_decode/")
TENSOR_METHODS = frozenset({
    "contiguous", "to", "t", "view", "reshape", "permute", "transpose", "float", "half",
    "bfloat16", "detach", "clone", "stack", "cat", "repeat", "repeat_interleave", "new_zeros",
    "new_ones", "new_full", "new_empty", "zeros", "ones", "full", "empty", "tensor", "item",
    "reciprocal", "squeeze", "unsqueeze", "flatten", "split", "chunk", "narrow", "expand"})
TENSOR_NAMES = ("weight", "scale", "bias", "stride", "workspace", "lock", "alpha", "cache",
                "packed", "norm")
TENSOR_ONLY = False


def _root_name(node: ast.expr) -> str:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _calls_tensor_op(value: ast.expr) -> bool:
    """The value calls ``torch.*`` / ``ops.*`` or a TENSOR_METHODS method."""
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            if _root_name(node.func) in ("torch", "ops"):
                return True
            if isinstance(node.func, ast.Attribute) and node.func.attr in TENSOR_METHODS:
                return True
    return False


def _tensorish(value: ast.expr, targets: list[ast.Attribute]) -> bool:
    if any(any(k in t.attr.lower() for k in TENSOR_NAMES) for t in targets):
        return True
    return _calls_tensor_op(value)


_R = TypeVar("_R")


def _memo_per_node(f: Callable[[ast.AST], _R]) -> Callable[[ast.AST], _R]:
    """``f(node)`` computed once per node and ``TENSOR_ONLY`` (every tree stays alive in
    ``_TREES``, so a node's id is not reused): the pools ask the same functions' stores and
    callees again from every file that reaches them."""
    cache: dict[tuple[int, bool], _R] = {}

    @functools.wraps(f)
    def memo(node: ast.AST) -> _R:
        key = (id(node), TENSOR_ONLY)
        if key not in cache:
            cache[key] = f(node)
        return cache[key]

    return memo


@_memo_per_node
def _stores(fn: ast.AST) -> list[tuple[int, str]]:
    args = set()
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = fn.args
        args = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    out = []
    for node in ast.walk(fn):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or _literal(node.value):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in args:
            continue  # an argument passed through, not derived here
        targets = _targets(node)
        if TENSOR_ONLY and not _tensorish(node.value, targets):
            continue
        out += [(t.lineno, t.attr) for t in targets]
    return out


@_memo_per_node
def _called_names(fn: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                names.add(f.id)
            elif isinstance(f, ast.Attribute):
                names.add(f.attr)
    return names


_TREES: dict[Path, ast.Module | None] = {}


def _parse(path: Path) -> ast.Module | None:
    if path not in _TREES:
        try:
            _TREES[path] = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            _TREES[path] = None
    return _TREES[path]


# store calls: name -> (index of the name argument, index of the value argument)
STORE_CALLS = {"register_buffer": (0, 1), "register_parameter": (0, 1), "setattr": (1, 2),
               "replace_parameter": (1, 2)}
STORE_KWARGS = {"name", "param_name", "tensor", "param", "new", "new_tensor", "value"}


def _args_of(fn: ast.AST) -> set[str]:
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = fn.args
        return {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    return set()


def _store_call(node: ast.AST) -> tuple[ast.expr, str, ast.expr] | None:
    """(receiver, name text, value) of a store call, or None."""
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    if fname not in STORE_CALLS:
        return None
    i_name, i_value = STORE_CALLS[fname]
    kw = {k.arg: k.value for k in node.keywords if k.arg in STORE_KWARGS}
    args = list(node.args)
    name = args[i_name] if len(args) > i_name else kw.get("name", kw.get("param_name"))
    value = args[i_value] if len(args) > i_value else next(
        (kw[k] for k in ("tensor", "param", "new", "new_tensor", "value") if k in kw), None)
    if name is None:
        return None
    if fname in ("setattr", "replace_parameter"):
        recv = args[0] if args else None
    else:
        recv = f.value if isinstance(f, ast.Attribute) else None
    if recv is None:
        return None
    text = name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) \
        else ast.unparse(name)
    return recv, text, value  # type: ignore[return-value]


def _keep(value: ast.expr | None, name: str, args: set[str]) -> bool:
    """The literal / passed-through-argument exclusion and the --tensor-only filter."""
    if _literal(value):
        return False
    assert value is not None
    if isinstance(value, ast.Name) and value.id in args:
        return False
    if TENSOR_ONLY:
        fake = ast.Attribute(value=ast.Name(id="_"), attr=name)
        return _tensorish(value, [fake])
    return True


@_memo_per_node
def _call_stores(fn: ast.AST) -> list[tuple[int, str]]:
    args = _args_of(fn)
    out = []
    for node in ast.walk(fn):
        hit = _store_call(node)
        if hit is not None and _keep(hit[2], hit[1], args):
            out.append((node.lineno, hit[1]))  # type: ignore[attr-defined]
    return out


def _guarded(test: ast.expr, negated: bool) -> tuple[str, str] | None:
    """(attr, kind) when ``test`` guards a first-use build of ``obj.attr`` (kind "attr" or
    "item"), other than the single ``obj.attr is None`` of ``lazy``; ``negated`` asks for the
    opposite polarity (the early-return form: the test holds when the cache exists)."""
    def hasattr_name(e: ast.expr) -> str | None:
        if (isinstance(e, ast.Call) and isinstance(e.func, ast.Name)
                and e.func.id in ("hasattr", "getattr") and len(e.args) >= 2
                and isinstance(e.args[1], ast.Constant) and isinstance(e.args[1].value, str)):
            return e.args[1].value
        return None

    if isinstance(test, ast.BoolOp):
        for v in test.values:
            if (isinstance(v, ast.Compare) and isinstance(v.left, ast.Attribute)
                    and len(v.ops) == 1
                    and isinstance(v.ops[0], ast.IsNot if negated else ast.Is)
                    and isinstance(v.comparators[0], ast.Constant)
                    and v.comparators[0].value is None):
                return v.left.attr, "attr"
            hit = _guarded(v, negated)
            if hit:
                return hit
        return None
    pos = test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        if negated:
            return None
        pos = test.operand
    elif not negated:
        # not-negated positive forms: getattr(...) is None, k not in obj.attr
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            name = hasattr_name(test.left)
            if (name and isinstance(test.left, ast.Call) and test.left.func.id == "getattr"
                    and isinstance(op, ast.Is) and isinstance(right, ast.Constant)
                    and right.value is None):
                return name, "attr"
            if isinstance(op, ast.NotIn) and isinstance(right, ast.Attribute):
                return right.attr, "item"
        return None
    else:
        # negated (early return) forms: obj.attr is not None, k in obj.attr, hasattr(...)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            if (isinstance(test.left, ast.Attribute) and isinstance(op, ast.IsNot)
                    and isinstance(right, ast.Constant) and right.value is None):
                return test.left.attr, "attr"
            name = hasattr_name(test.left)
            if (name and isinstance(op, ast.IsNot) and isinstance(right, ast.Constant)
                    and right.value is None):
                return name, "attr"
            if isinstance(op, ast.In) and isinstance(right, ast.Attribute):
                return right.attr, "item"
            return None
    name = hasattr_name(pos)
    if name:
        return name, "attr"
    if isinstance(pos, ast.Attribute):
        return pos.attr, "attr"
    return None


def _stores_of(stmts: list[ast.stmt], attr: str, args: set[str]) -> list[tuple[int, str]]:
    """Stores of ``<obj>.attr``, ``<obj>.attr[k]`` or ``setattr(obj, "attr", v)`` in stmts."""
    out = []
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                flat = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
                for t in flat:
                    base = t.value if isinstance(t, ast.Subscript) else t
                    if (isinstance(base, ast.Attribute) and base.attr == attr
                            and _keep(node.value, attr, args)):
                        out.append((base.lineno, attr))
            hit = _store_call(node)
            if hit is not None and hit[1] == attr and _keep(hit[2], attr, args):
                out.append((node.lineno, attr))  # type: ignore[attr-defined]
    return out


def _lazy2_stores(fn: ast.AST) -> list[tuple[int, str]]:
    args = _args_of(fn)
    out: list[tuple[int, str]] = []
    for block in ast.walk(fn):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(block, field, None)
            if not isinstance(stmts, list):
                continue
            for i, node in enumerate(stmts):
                if not isinstance(node, ast.If):
                    continue
                hit = _guarded(node.test, negated=False)
                if hit:
                    out += _stores_of(node.body, hit[0], args)
                hit = _guarded(node.test, negated=True)
                if hit and node.body and isinstance(node.body[-1], ast.Return):
                    out += _stores_of(stmts[i + 1:], hit[0], args)
    return out


@functools.cache
def _module_file(module: str) -> Path | None:
    if not module.startswith("vllm.") and module != "vllm":
        return None
    root = _vllm_root()
    parts = module.split(".")[1:]
    base = root.joinpath(*parts) if parts else root
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


@functools.cache
def _functions_by_name(tree: ast.Module) -> dict[str, list[ast.AST]]:
    """Every function of ``tree`` (nested ones too) by name, in walk order (read-only)."""
    funcs: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            funcs.setdefault(node.name, []).append(node)
    return funcs


@functools.cache
def _imports(tree: ast.Module, rel: str) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """(name -> (module, object name) for ``from m import f``, alias -> module for modules)."""
    here = rel[:-3].split("/")  # vllm/a/b.py -> [vllm, a, b]
    pkg = here[:-1] if here[-1] != "__init__" else here[:-1]
    names: dict[str, tuple[str, str]] = {}
    mods: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[:len(pkg) - node.level + 1] if node.level > 1 else pkg
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                local = a.asname or a.name
                if _module_file(f"{mod}.{a.name}") is not None:
                    mods[local] = f"{mod}.{a.name}"
                else:
                    names[local] = (mod, a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    mods[a.asname] = a.name
    return names, mods


def _xfile_callees(tree: ast.Module, rel: str,
                   fns: list[ast.AST]) -> list[tuple[str, ast.AST]]:
    """(file, function) of other vLLM files that ``fns`` call, with their same-file callees."""
    names, mods = _imports(tree, rel)
    root = _vllm_root()
    wanted: set[tuple[str, str]] = set()
    for fn in fns:
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Name) and f.id in names:
                wanted.add(names[f.id])
            elif (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                  and f.value.id in mods):
                wanted.add((mods[f.value.id], f.attr))
    out: list[tuple[str, ast.AST]] = []
    for mod, obj in sorted(wanted):
        path = _module_file(mod)
        if path is None:
            continue
        target = "vllm/" + path.relative_to(root).as_posix()
        if target == rel:
            continue
        other = _parse(path)
        if other is None:
            continue
        funcs = _functions_by_name(other)
        todo: list[ast.AST] = []
        for node in other.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == obj:
                todo.append(node)
            elif isinstance(node, ast.ClassDef) and node.name == obj:
                todo += [i for i in node.body if isinstance(i, ast.FunctionDef)
                         and i.name == "__init__"]
        seen: set[int] = set()
        while todo:
            g = todo.pop()
            if id(g) in seen:
                continue
            seen.add(id(g))
            out.append((target, g))
            for name in _called_names(g):
                todo += [h for h in funcs.get(name, []) if name != "__init__"]
    return out


def _same_file_closure(funcs: dict[str, list[ast.AST]], start: list[ast.AST]) -> list[ast.AST]:
    """``start`` and its same-file callees, transitively by name (``__init__`` not followed)."""
    todo, seen, out = list(start), set(), []
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        out.append(fn)
        for name in _called_names(fn):
            todo += [g for g in funcs.get(name, []) if name != "__init__"]
    return out


def _recv_callees(tree: ast.Module, rel: str,
                  fns: list[ast.AST]) -> list[tuple[str, ast.AST]]:
    """(file, method) of other vLLM files reached from ``fns`` by a call ``<recv>.m(...)``:
    method ``m`` of each class the file imports by name, with its same-file callees."""
    names, mods = _imports(tree, rel)
    wanted: set[str] = set()
    for fn in fns:
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                recv = node.func.value
                if not (isinstance(recv, ast.Name) and recv.id in mods):
                    wanted.add(node.func.attr)
    wanted.discard("__init__")
    root = _vllm_root()
    out: list[tuple[str, ast.AST]] = []
    for mod, obj in sorted(set(names.values())):
        path = _module_file(mod)
        if path is None or not wanted:
            continue
        target = "vllm/" + path.relative_to(root).as_posix()
        other = _parse(path) if target != rel else None
        if other is None:
            continue
        start = [i for node in other.body if isinstance(node, ast.ClassDef) and node.name == obj
                 for i in node.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and i.name in wanted]
        if not start:
            continue
        funcs = _functions_by_name(other)
        out += [(target, g) for g in _same_file_closure(funcs, start)]
    return out


SETUP_NAMES = ("load_model", "load_draft_model", "finalize", "post_init", "post_load",
               "after_load", "postprocess", "post_process")
MODEL_ARGS = frozenset({"model", "target_model", "draft_model", "drafter"})
RUN_FNS = frozenset({"__init__", "forward", "apply", "__call__", "create_weights",
                     "process_weights_after_loading"})
WEIGHT_CALLS = frozenset({"named_parameters", "parameters", "state_dict", "get_parameter"})


def _setup_hook(fn: ast.AST) -> bool:
    """A load-time setup step other than PWAL: a function (not ``__init__``, ``forward``, PWAL)
    whose name holds a SETUP_NAMES word, or that receives a loaded model (an argument named in
    MODEL_ARGS)."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    if fn.name in ("__init__", "process_weights_after_loading", "forward"):
        return False
    return any(k in fn.name.lower() for k in SETUP_NAMES) or bool(_args_of(fn) & MODEL_ARGS)


def _reads_weight(value: ast.expr) -> bool:
    """The expression reads a weight-like attribute (``weight``, ``bias``, ``data``, ``*_weight``,
    ``*_scale``, ``*_bias``) or enumerates parameters (``named_parameters()`` and the like)."""
    for node in ast.walk(value):
        if isinstance(node, ast.Attribute) and (
                node.attr in ("weight", "bias", "data")
                or node.attr.endswith(("_weight", "_scale", "_bias"))):
            return True
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in WEIGHT_CALLS):
            return True
    return False


def _weight_derived_stores(fn: ast.AST) -> list[tuple[int, str]]:
    """Attribute stores whose value reads a weight, in a function outside RUN_FNS."""
    if getattr(fn, "name", "") in RUN_FNS:
        return []
    kept = set(_stores(fn))
    out: list[tuple[int, str]] = []
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None \
                and _reads_weight(node.value):
            out += [k for k in ((t.lineno, t.attr) for t in _targets(node)) if k in kept]
    return out


def _flag(test: ast.expr) -> str | None:
    """The attribute a first-call flag test reads: ``not obj.f``, ``obj.f is None``, ``obj.f is
    False`` or ``obj.f == False`` (the guard holds before the first call)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand.attr if isinstance(test.operand, ast.Attribute) else None
    if (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.left, ast.Attribute)
            and isinstance(test.ops[0], (ast.Is, ast.Eq))
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value in (None, False)):
        return test.left.attr
    return None


def _flag_init_stores(fn: ast.AST) -> list[tuple[int, str]]:
    """Stores of attributes OTHER than the flag, in the body of ``if <flag test>:`` (a
    first-call initialisation behind a flag, which ``lazy`` and ``lazy2`` do not reach)."""
    kept = set(_stores(fn))  # the literal / argument exclusion and filter, on fn's args
    out: list[tuple[int, str]] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.If):
            flag = _flag(node.test)
            if flag is None:
                continue
            for stmt in node.body:
                out += [k for k in _stores(stmt) if k[1] != flag and k in kept]
    return out


V13_WHOLE = ("vllm/model_executor/offloader/", "vllm/lora/", "vllm/compilation/",
             "vllm/model_executor/custom_op.py")
V13_SCOPES = SCOPES + ("vllm/lora/", "vllm/v1/worker/", "vllm/v1/sample/", "vllm/compilation/")
HELPER_WORDS = ("pack", "prepare", "convert", "shuffle", "swizzle", "reorder", "permute",
                "transform", "interleave", "quantize", "fuse", "gather", "tie")
GENERIC_NAMES = frozenset({"weight", "scale", "alpha", "beta"})
SPECS = HERE.parent.parent / "specs"


@functools.cache
def _spec_declared() -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    """(names declared for any owner, (class, name) pairs for the generic names): every derived
    ``name`` of ``specs/*.yaml``; a generic or index name counts only in the classes the spec
    targets (last component of ``module_class``)."""
    import yaml

    anywhere: set[str] = set()
    in_class: set[tuple[str, str]] = set()
    for path in sorted(SPECS.glob("*.yaml")):
        for spec in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("specs", []):
            classes = spec.get("target", {}).get("module_class", [])
            classes = [classes] if isinstance(classes, str) else classes
            for derived in spec.get("derived", []):
                name = str(derived["name"])
                if name in GENERIC_NAMES or name.isdigit():
                    in_class |= {(c.rsplit(".", 1)[-1], name) for c in classes}
                else:
                    anywhere.add(name)
    return frozenset(anywhere), frozenset(in_class)


def _declared(cls: str, attr: str) -> bool:
    anywhere, in_class = _spec_declared()
    return attr in anywhere or (cls, attr) in in_class


def _helper_return(value: ast.expr) -> bool:
    """The value is, or holds, the return of a helper whose name holds a HELPER_WORDS word."""
    for node in ast.walk(value):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) \
                else ""
            if any(w in name.lower() for w in HELPER_WORDS):
                return True
    return False


def _functions_with_class(tree: ast.Module) -> list[tuple[ast.AST, str]]:
    """Every function of the file with the name of its nearest enclosing class ("" if none)."""
    out: list[tuple[ast.AST, str]] = []

    def visit(node: ast.AST, cls: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, child.name)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((child, cls))
                visit(child, cls)
            else:
                visit(child, cls)

    visit(tree, "")
    return out


def _scan_v13(path: Path, rel: str) -> set[tuple[str, int, str]]:
    """The stage-v13 list ``undeclared_derived`` for one file (before the earlier-list and
    declared-by-spec removal of the latter done here per store)."""
    tree = _parse(path)
    if tree is None:
        return set()
    whole = rel.startswith(V13_WHOLE)
    found: set[tuple[str, int, str]] = set()
    for fn, cls in _functions_with_class(tree):
        kept = set(_stores(fn))
        keys: set[tuple[int, str]] = set()
        if whole:
            keys |= kept | set(_call_stores(fn))
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and (
                    _reads_weight(node.value) or _helper_return(node.value)):
                keys |= {k for k in ((t.lineno, t.attr) for t in _targets(node)) if k in kept}
        found |= {(rel, ln, a) for ln, a in keys if not _declared(cls, a)}
    return found


def _builds_tensor(value: ast.expr) -> bool:
    """The value calls ``torch.*`` / ``ops.*``, a TENSOR_METHODS method or a helper."""
    return _calls_tensor_op(value) or _helper_return(value)


def _built_stores(path: Path, rel: str, skip: tuple[str, ...],
                  make_test: Callable[[ast.AST], Callable[[ast.expr], bool] | None]
                  ) -> set[tuple[str, int, str]]:
    """Stores of either kind whose value passes ``make_test(fn)`` (None skips ``fn``), in the
    functions not named in ``skip``; ``data`` / ``weight_loader`` and declared ones removed."""
    tree = _parse(path)
    if tree is None:
        return set()
    found: set[tuple[str, int, str]] = set()
    for fn, cls in _functions_with_class(tree):
        test = None if getattr(fn, "name", "") in skip else make_test(fn)
        if test is None:
            continue
        kept = set(_stores(fn)) | set(_call_stores(fn))
        keys: set[tuple[int, str]] = set()
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                value, hits = node.value, [(t.lineno, t.attr) for t in _targets(node)]
            else:
                call = _store_call(node)
                if call is None or call[2] is None:
                    continue
                value, hits = call[2], [(node.lineno, call[1])]  # type: ignore[attr-defined]
            if test(value):
                keys |= {k for k in hits if k in kept and k[1] not in ("data", "weight_loader")}
        found |= {(rel, ln, a) for ln, a in keys if not _declared(cls, a)}
    return found


def _scan_v13b(path: Path, rel: str) -> set[tuple[str, int, str]]:
    """The stage-v13b list ``built_from_weights`` for one file (declared-by-spec removed)."""
    return _built_stores(path, rel, ("__init__", "create_weights"),
                         lambda fn: lambda v: _reads_weight(v) and _builds_tensor(v))


WEIGHT_ARG_WORDS = ("weight", "scale", "bias", "param", "tensor")


def _tensor_names(fn: ast.AST) -> set[str]:
    """Arguments annotated or named like tensors, and locals bound to a weight read."""
    names: set[str] = set()
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = fn.args
        for x in a.posonlyargs + a.args + a.kwonlyargs:
            note = ast.unparse(x.annotation) if x.annotation is not None else ""
            low = x.arg.lower()
            if x.arg in ("self", "cls"):
                continue
            if ("Tensor" in note or "Parameter" in note
                    or any(w in low for w in WEIGHT_ARG_WORDS)
                    or (low.startswith("w") and low[1:].isdigit()) or low == "w"):
                names.add(x.arg)
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and _reads_weight(node.value):
            for t in node.targets:
                for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                    if isinstance(e, ast.Name):
                        names.add(e.id)
    return names


def _builds_from(value: ast.expr, names: set[str]) -> bool:
    """The value builds a tensor from one of ``names`` (method on it, or torch/ops/helper
    call taking it)."""
    for node in ast.walk(value):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in TENSOR_METHODS \
                and _root_name(f.value) in names:
            return True
        fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) \
            else ""
        if _root_name(f) in ("torch", "ops") or any(w in fname.lower() for w in HELPER_WORDS):
            for arg in node.args:
                if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(arg)):
                    return True
    return False


def _scan_v13c(path: Path, rel: str) -> set[tuple[str, int, str]]:
    """The stage-v13c list ``built_from_args`` for one file (declared-by-spec removed)."""
    def make_test(fn: ast.AST) -> Callable[[ast.expr], bool] | None:
        names = _tensor_names(fn)
        return (lambda v: _builds_from(v, names)) if names else None

    return _built_stores(path, rel, ("create_weights",), make_test)


def _scan(path: Path, rel: str, needed: frozenset[str] = frozenset(ALL_LISTS)
          ) -> dict[str, set[tuple[str, int, str]]]:
    """The stores of one file in each list of ``needed`` (the others stay empty)."""
    found: dict[str, set[tuple[str, int, str]]] = {k: set() for k in ALL_LISTS}
    tree = _parse(path)
    if tree is None:
        return found
    funcs = _functions_by_name(tree)
    owner: dict[ast.AST, str] = {}
    for cls in ast.walk(tree):
        if isinstance(cls, ast.ClassDef):
            for item in cls.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    owner[item] = cls.name
    # pwal: PWAL bodies and same-file callees, transitively by name
    pwal_fns: list[ast.AST] = []
    todo, seen = list(funcs.get("process_weights_after_loading", [])), set()
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        found["pwal"] |= {(rel, ln, a) for ln, a in _stores(fn)}
        found["pwal_calls"] |= {(rel, ln, a) for ln, a in _call_stores(fn)}
        pwal_fns.append(fn)
        for name in _called_names(fn):
            todo += [g for g in funcs.get(name, []) if name != "__init__"]
    # lazy: if <obj>.attr is None: ... <obj>.attr = expr
    if "lazy" in needed:
        for fns in funcs.values():
            for fn in fns:
                if fn.name == "__init__":
                    continue
                for node in ast.walk(fn):
                    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
                        continue
                    t = node.test
                    right = t.comparators[0]
                    if not (isinstance(t.left, ast.Attribute) and len(t.ops) == 1
                            and isinstance(t.ops[0], ast.Is) and isinstance(right, ast.Constant)
                            and right.value is None):
                        continue
                    for stmt in node.body:
                        for ln, a in _stores(stmt):
                            if a == t.left.attr:
                                found["lazy"].add((rel, ln, a))
    # loader: load_weights / post_load_weights, and constructors of rebuilt objects
    if "loader" in needed:
        for name in ("load_weights", "post_load_weights"):
            for fn in funcs.get(name, []):
                found["loader"] |= {(rel, ln, a) for ln, a in _stores(fn)}
        for fn in funcs.get("__init__", []):
            cls = owner.get(fn, "")
            if any(k in cls for k in ("Experts", "Kernel", "Prepared")):
                found["loader"] |= {(rel, ln, a) for ln, a in _stores(fn)}
    # lazy2: caches built on first use behind other guards
    if "lazy2" in needed:
        for fns in funcs.values():
            for fn in fns:
                if fn.name != "__init__":
                    found["lazy2"] |= {(rel, ln, a) for ln, a in _lazy2_stores(fn)}
    # pwal_xfile: functions of other files that the pwal functions call
    if "pwal_xfile" in needed:
        for target, fn in _xfile_callees(tree, rel, pwal_fns):
            found["pwal_xfile"] |= {(target, ln, a) for ln, a in _stores(fn) + _call_stores(fn)}
    # recv_spec (stage v10): receiver calls into other files' classes, speculator code
    if "recv_spec" in needed:
        loader_fns = _same_file_closure(funcs, funcs.get("load_weights", [])
                                        + funcs.get("post_load_weights", []))
        for target, fn in _recv_callees(tree, rel, pwal_fns + loader_fns):
            found["recv_spec"] |= {(target, ln, a) for ln, a in _stores(fn) + _call_stores(fn)}
        if rel.startswith(SPEC_WORKER):
            for fns in funcs.values():
                for fn in fns:
                    if fn.name != "__init__":
                        found["recv_spec"] |= {(rel, ln, a)
                                               for ln, a in _stores(fn) + _call_stores(fn)}
    # setup_hooks (stage v12): load-time setup outside PWAL and first-call initialisation
    if "setup_hooks" in needed:
        hooks = _same_file_closure(funcs, [fn for fns in funcs.values() for fn in fns
                                           if _setup_hook(fn)])
        for fn in hooks:
            found["setup_hooks"] |= {(rel, ln, a) for ln, a in _stores(fn) + _call_stores(fn)}
        for target, fn in _recv_callees(tree, rel, hooks):
            found["setup_hooks"] |= {(target, ln, a) for ln, a in _stores(fn) + _call_stores(fn)}
        for fns in funcs.values():
            for fn in fns:
                if fn.name != "__init__":
                    found["setup_hooks"] |= {(rel, ln, a) for ln, a in _flag_init_stores(fn)
                                             + _weight_derived_stores(fn)}
    return found


def pools(lists: tuple[str, ...] = LISTS) -> dict[str, list[tuple[str, int, str]]]:
    root = _vllm_root()
    out: dict[str, set[tuple[str, int, str]]] = {k: set() for k in ALL_LISTS}
    # a list's pool depends only on the lists before it in ALL_LISTS (their keys leave it)
    needed = frozenset(ALL_LISTS[:1 + max(map(ALL_LISTS.index, lists), default=0)])
    for path in sorted(root.rglob("*.py")):
        rel = "vllm/" + path.relative_to(root).as_posix()
        if any(k in V13_LISTS for k in lists) and (
                not TENSOR_ONLY or rel.startswith(V13_SCOPES)):
            out["undeclared_derived"] |= _scan_v13(path, rel)  # stage v13: its own scope
            out["built_from_weights"] |= _scan_v13b(path, rel)  # stage v13b: the same scope
            out["built_from_args"] |= _scan_v13c(path, rel)  # stage v13c: the same scope
        if TENSOR_ONLY and not rel.startswith(SCOPES):
            continue
        for k, v in _scan(path, rel, needed).items():
            if k not in V13_LISTS:
                out[k] |= v
    if TENSOR_ONLY:  # pwal_xfile and recv_spec targets may lie outside the scanned scope
        for k in ("pwal_xfile", "recv_spec", "setup_hooks"):
            out[k] = {c for c in out[k] if c[0].startswith(SCOPES)}
    earlier: set[tuple[str, int, str]] = set()
    for k in ALL_LISTS:  # each new list holds only keys no earlier list holds
        if k in NEW_LISTS + V10_LISTS + V12_LISTS + V13_LISTS:
            out[k] -= earlier
        earlier |= out[k]
    return {k: sorted(out[k]) for k in lists}


def _keys(node: object) -> set[tuple[str, int, str]]:
    """Every (file, line, attr) named by a dict anywhere in a JSON document."""
    out: set[tuple[str, int, str]] = set()
    if isinstance(node, dict):
        if {"file", "line", "attr"} <= node.keys():
            out.add((node["file"], node["line"], node["attr"]))
        for v in node.values():
            out |= _keys(v)
    elif isinstance(node, list):
        for v in node:
            out |= _keys(v)
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    global TENSOR_ONLY
    ap = argparse.ArgumentParser(description="Draw the outside review's held-out recall "
                                 "candidates (seed committed first).")
    ap.add_argument("--tensor-only", action="store_true",
                    help="stage v2 filter: model code, tensor-building stores")
    ap.add_argument("--pool-size-only", action="store_true",
                    help="print only each pool's size after exclusion (a dry run before the seed)")
    ap.add_argument("--seed-file", metavar="JSON",
                    help='seed file ({"seed": int, "n": int}) committed before the draw; '
                    "default static_recall_outside_seed[_v2].json")
    ap.add_argument("--exclude", nargs="*", default=[], metavar="JSON",
                    help="earlier candidate lists: their (file, line, attr) leave the pools "
                    "before the draw, so a new draw holds only fresh candidates")
    ap.add_argument("--lists", nargs="+", default=list(LISTS), choices=ALL_LISTS,
                    help="lists to draw (stage v8, v10, v12, v13); list k of ALL_LISTS uses "
                    "seed + k")
    ns = ap.parse_args(sys.argv[1:] if argv is None else argv)
    TENSOR_ONLY = ns.tensor_only
    if ns.pool_size_only:
        excluded_keys: set[tuple[str, int, str]] = set()
        for path in ns.exclude:
            excluded_keys |= _keys(json.loads(Path(path).read_text(encoding="utf-8")))
        for name, pool in pools(tuple(ns.lists)).items():
            print(name, len([c for c in pool if c not in excluded_keys]))
        return 0
    name = "static_recall_outside_seed" + ("_v2" if TENSOR_ONLY else "") + ".json"
    seed_path = Path(ns.seed_file) if ns.seed_file else HERE / name
    seed_file = json.loads(seed_path.read_text(encoding="utf-8"))
    seed, n = seed_file["seed"], seed_file["n"]
    excluded: set[tuple[str, int, str]] = set()
    for path in ns.exclude:
        excluded |= _keys(json.loads(Path(path).read_text(encoding="utf-8")))
    out = {"seed": seed, "n": n, "vllm": "0.33.0", "tensor_only": TENSOR_ONLY, "lists": {}}
    if ns.exclude:
        out["excluded"] = {"files": [Path(p).name for p in ns.exclude], "keys": len(excluded)}
    lists = tuple(ns.lists)
    for name, pool in pools(lists).items():
        k = ALL_LISTS.index(name)
        pool = [c for c in pool if c not in excluded]
        size = seed_file.get("n_by_list", {}).get(name, n)  # stage v8: per-list n
        drawn = random.Random(seed + k).sample(pool, min(size, len(pool)))
        picked = sorted(drawn)
        out["lists"][name] = {"population": len(pool),
                              "candidates": [{"file": f, "line": ln, "attr": a}
                                             for f, ln, a in picked]}
        if name in V13_LISTS:  # stage v13: a prefix of the drawn order is a random subsample
            out["lists"][name]["drawn_order"] = [picked.index(c) for c in drawn]
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
