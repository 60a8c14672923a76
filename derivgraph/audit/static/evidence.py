"""Evidence per finding: the reader after load and the weight, and the severity they allow.

An error or warning of the static audit must say who reads the stored tensor after loading
(:class:`.readers.Reader`: a kernel call, a forward/apply method or a captured callable) and,
for an error, which weight it derives from. :func:`apply_evidence` looks both up and lowers the
severity where the evidence is missing:

* a reader may be a config builder (a method annotated to return a config of tensors) of the
  storing class: the config carries the value to the kernels;
* ``self.x`` no method of its class family reads after load may be handed to an object the
  family builds (a constructor or builder argument, :mod:`.handed_reader`): that object's read;
* no reader after load: at most ``info`` (a store onto a throwaway object, a quant-config field
  no kernel reads, a value nothing uses);
* a reader but no weight in the value: at most ``warning`` (a workspace or constant moved by a
  rerun, never stale); a config whose weight only its builder's arguments name
  (``w1_scale=layer.w13_weight_scale``, :mod:`.config_reader`) names that weight and stays at most
  ``warning``: it holds a reference to the layer's parameter, refilled in place, or a product
  made with it, moved by a rerun;
* a fold (in-place write into a loaded parameter): ``warning`` only where it can run twice on
  one load path, i.e. its function is also called by code that runs after loading; otherwise
  ``info`` (every load path refills the parameter before the post-load step reruns);
* a value made once (model-level, initial load only, or in a step a weight loader calls) from
  ``self.x`` that the same step then deletes (also by deleting every registered parameter):
  ``info``, a reload carrying ``x`` fails loudly, one without it leaves the value right;
* a site inside vLLM's reload machinery (``model_loader/reload/``): ``info``, the machinery
  is what refills the layers;
* a local bound to a kept parameter and replaced by a copy only under a dtype test
  (``ws = get_scale(l); if ws.dtype == e8m0: ws = upcast(ws)``), stored by the initial-load
  hook: a reference to the parameter the reload refills for every other dtype, but a copy no
  reload rebuilds for that one: at most ``warning`` (with a reader); a dtype *view* under the
  test (``ws = ws.view(dtype)``) shares the kept storage on both paths: ``info``;
* a registered parameter loaded around its ``weight_loader`` (:mod:`.classwide`): an error
  when read after load, whatever it derives from (it is the checkpoint weight itself);
* a copy made once and refilled with ``copy_`` by its post-load step (stale only after a
  kernel-format reload) that code running after load also refreshes from its source: ``info``;
* a container returned by a builder of its class that reads no argument, no ``torch`` and no
  tensor attribute (:mod:`.tensor_free`): ``info``, it holds dtypes and scalars only;
* a container built only on the first post-load run (:mod:`.first_run`: its call sits under
  ``if self.Y is None`` or a local ``not (self.Y is not None)`` that the storing function sets)
  by a builder handing on only references to the layer's attributes: ``info``, the kept
  parameters are refilled in place;
* a weight-free container whose reader's function only post-load code calls (transitively,
  :meth:`.readers.ReaderIndex.only_post_load`): ``info``, it is read while the weights are
  prepared, before any capture;
* a store or reader that runs only on the CPU platform (:mod:`.platforms`), unless it copies a
  kept parameter a kernel-format reload refills or its step returns early on a flag it sets
  (:func:`.platforms.rerun_guard`: a reload cannot rebuild it) without emptying its source
  parameters (emptied, both reload paths raise instead): ``info``, no device graph is
  captured there and the reader looks the attribute up again on every call.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from derivgraph.audit.static.computed_after_load import preferrer
from derivgraph.audit.static.config_reader import built_reader, config_reader
from derivgraph.audit.static.first_run import first_run_guard, references_only
from derivgraph.audit.static.forked import affinity_order, forked_chunks, workers_for
from derivgraph.audit.static.handed_reader import handed_reader, handed_tree
from derivgraph.audit.static.handoff import kept_handoffs
from derivgraph.audit.static.loaders import is_loader_function, pooler_only, refilled_in_place
from derivgraph.audit.static.platforms import (
    cpu_only,
    empties_source,
    rerun_guard,
    reset_flags,
    source_dropped,
)
from derivgraph.audit.static.readers import (
    NOT_READERS,
    Reader,
    ReaderIndex,
    ReaderKind,
    derives_from,
    escapes,
)
from derivgraph.audit.static.returned_lookup import returned_lookup
from derivgraph.audit.static.semantics import Severity, Store
from derivgraph.audit.static.sites import CategoryId
from derivgraph.audit.static.tensor_free import tensor_free_builder

if TYPE_CHECKING:
    from derivgraph.audit.static.finding import StaticFinding

__all__ = ["RELOAD_MACHINERY", "FunctionTexts", "apply_evidence", "function_text"]

RELOAD_MACHINERY = ("model_loader/reload/",)
"""Path fragments of the engine's own reload code (vLLM 0.33's layerwise reload)."""

_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}
_LOCAL = re.compile(r"[a-z_]\w*")
_DEF = re.compile(r"(?:def|class)[ \t]+(\w+)")


def function_text(text: str, function: str) -> str:
    """The source of ``function`` (``"Class.method"`` or ``"func"``) in a file's text, or ``""``
    (not memoised: :class:`FunctionTexts` is the evidence phase's memo)."""
    parts = function.split(".")
    pos, indent = 0, -1
    for part in parts:
        found = None
        for m in _DEF.finditer(text, pos):
            start = text.rfind("\n", 0, m.start()) + 1
            head = text[start:m.start()]
            if m.group(1) == part and head.strip(" \t") in ("", "async") and len(head) > indent:
                found = (start, len(head))
                break
        if found is None:
            return ""
        pos, indent = found
    # a line at the def's indent or less ends it, unless it closes the signature (``) -> T:``)
    end = re.compile(rf"^[ \t]{{0,{indent}}}(?![)\]])\S", re.M).search(
        text, text.find("\n", pos) + 1)
    return text[pos:end.start() if end else len(text)]


class FunctionTexts:
    """:func:`function_text`, memoised for one evidence pass: the phase asks for one
    function's text several times per finding. The memo (keyed on the file's text) belongs to
    the pass and is dropped with it, so no file text outlives the scan."""

    def __init__(self) -> None:
        self._memo: dict[tuple[str, str], str] = {}

    def __call__(self, text: str, function: str) -> str:
        key = (text, function)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = function_text(text, function)
        return found


def _cap(finding: StaticFinding, most: Severity, note: str) -> StaticFinding:
    if _RANK[finding.severity] <= _RANK[most]:
        return dataclasses.replace(finding, evidence=note)
    return dataclasses.replace(finding, severity=most, evidence=note)


def _dtype_conditional_reference(finding: StaticFinding, body: str) -> str | None:
    """``ws = <lookup>`` then ``ws = <copy>`` only under ``if ws.dtype ...``: on the default
    path the stored local is the kept parameter itself (also through a nested helper that
    returns such a local, ``self._s = _prep(self.wo)``). ``"view"`` when every conditional
    rebind is a dtype view (``ws = ws.view(dtype)``: the kept storage on both paths),
    ``"copy"`` otherwise, None when the pattern does not hold."""
    if finding.store is not Store.INITIAL_LOAD_COPY:
        return None
    local = finding.expr.strip()
    helper = re.fullmatch(r"(\w+)\(.*\)", local)
    if helper:
        nested = function_text(body, helper.group(1)) if f"def {helper.group(1)}(" in body else ""
        returned = [r for r in re.findall(r"^\s*return\s+(\w+)\s*$", nested, re.M)
                    if r != "None"]
        if not nested or len(set(returned)) != 1:
            return None
        body, local = nested, returned[0]
    if not _LOCAL.fullmatch(local):
        return None
    n = re.escape(local)
    binds = list(re.finditer(rf"^([ \t]*){n}\s*=\s*([^\n]+)", body, re.M))
    if len(binds) < 2:
        return None
    first_indent = len(binds[0].group(1))
    for b in binds[1:]:
        before = body[:b.start()].rstrip().splitlines()
        guard = next((ln for ln in reversed(before)
                      if len(ln) - len(ln.lstrip()) < len(b.group(1))), "")
        if len(b.group(1)) <= first_indent or not re.match(rf"\s*if\s+{n}\.dtype\b", guard):
            return None
    if re.search(r"\.(?:clone|contiguous|to|float|t)\(", binds[0].group(2)):
        return None
    views = all(re.fullmatch(rf"{n}\.view\([^()]*\)\s*", b.group(2)) for b in binds[1:])
    return "view" if views else "copy"


def _deleted_source(finding: StaticFinding, body: str) -> str | None:
    """``self.x`` when a step that runs once per load (a model-level, initial-load-only step,
    or one a weight loader calls, ``load_weights -> _repack``) derives the value from ``self.x``
    and then deletes it (``del self.x``, ``delattr(self, "x")``, or every registered parameter:
    ``for n in list(self._parameters): delattr(self, n)``): nothing can refill the source, so
    no reload can leave the value stale without failing."""
    once = finding.store is Store.INITIAL_LOAD_COPY or bool(
        finding.via and is_loader_function(finding.via[0]))
    if not once or not body:
        return None
    for m in re.finditer(r"^[ \t]*(?:del[ \t]+(self\.\w+)[ \t]*$|delattr\(self,[ \t]*"
                         r"[\"'](\w+)[\"']\))", body, re.M):
        chain = m.group(1) or f"self.{m.group(2)}"
        if re.search(rf"{re.escape(chain)}\b(?!\s*=[^=])", body[:m.start()]):
            return chain
    every = _DELETES_EVERY_PARAMETER.search(body)
    read = re.search(r"\bself\.\w+", finding.expr)
    if every and read and re.search(rf"{re.escape(read.group(0))}\b(?!\s*=[^=])",
                                    body[:every.start()]):
        return f"{read.group(0)} (every registered parameter)"
    return None


_DELETES_EVERY_PARAMETER = re.compile(
    r"^[ \t]*for[ \t]+(\w+)[ \t]+in[ \t]+list\(self\._parameters\)[ \t]*:[ \t]*\n"
    r"[ \t]*delattr\(self,[ \t]*\1[ \t]*\)", re.M)


def apply_evidence(findings: Iterable[StaticFinding], files: Sequence[tuple[str, str]],
                   post_load: Iterable[tuple[int, str | None, str]],
                   family: Callable[[str], frozenset[str]],
                   ancestors: Callable[[str], frozenset[str]] | None = None,
                   config_builders: frozenset[str] = frozenset(),
                   jobs: int | None = None) -> list[StaticFinding]:
    """The findings with ``reader``, ``reader_kind``, ``derives_from`` and ``evidence`` filled
    in, and severities lowered where the evidence is missing (see the module docstring).
    ``jobs``: forked workers sharing the findings to judge (:func:`_judge_all`)."""
    findings = list(findings)
    index = ReaderIndex(files, post_load, family, config_builders)
    by_display = {display: text for display, text in files}
    keepers: dict[frozenset[str], tuple[str, str] | None] = {}
    reset = reset_flags(text for display, text in files
                        if any(m in display for m in RELOAD_MACHINERY))
    todo = [f for f in findings
            if not (f.severity is Severity.INFO or f.category is CategoryId.DYNAMIC_NAME
                    and not any(m in f.file for m in RELOAD_MACHINERY))]

    texts = FunctionTexts()
    allocates: dict[str, bool] = {}  # each file's 0-element allocation test, for this pass
    emptied: dict[str, str | None] = {}  # and each module's emptying found in the tree
    def judge(f: StaticFinding) -> StaticFinding:
        judged = _judge(f, index, by_display.get(f.file, ""), family, keepers, texts)
        return _on_cpu(judged, by_display, ancestors, reset, texts, (allocates, emptied)) \
            if judged.reader else judged

    done = dict(zip(map(id, todo), _judge_all(judge, index, todo, jobs)))
    return kept_handoffs([done.get(id(f), f) for f in findings], index,
                         lambda f: texts(by_display.get(f.file, ""), f.function))


def _judge_all(judge: Callable[[StaticFinding], StaticFinding], index: ReaderIndex,
               todo: list[StaticFinding], jobs: int | None) -> list[StaticFinding]:
    """``judge`` of each finding of ``todo``, in order. Every read of the findings' attributes
    is first found here, in one pass over the tree; with several workers (:mod:`.forked`:
    forked, they inherit the reader index and those reads) each then takes the findings of
    its files (:func:`.forked.affinity_order`: the tables a file's findings build, such as its
    parsed tree, are then built in one worker, not in both).
    The judgements are independent of each other: the index's tables are caches, the same
    whichever finding fills them (a name's reads do not depend on the names searched with it,
    :meth:`.readers.ReaderIndex.prefetch`), so one search serves all workers instead of one
    search per worker over nearly the same files."""
    workers = workers_for(len(todo), jobs, 32)
    index.files_naming("")  # the word table every search starts from, built once
    handed_tree(index)  # and the class table of handed_reader (and of kept_handoffs after)
    index.prefetch({f.attr for f in todo})  # and every read of the findings' attributes
    order = affinity_order([f.file for f in todo], workers)  # a file's findings: one worker

    def work(chunk: list[int]) -> list[StaticFinding]:
        return [judge(todo[order[k]]) for k in chunk]

    out: list[StaticFinding] = list(todo)
    for chunk, judged in forked_chunks(work, len(todo), workers,
                                       max(-(-len(todo) // workers), 1)):
        for k, f in zip(chunk, judged):
            out[order[k]] = f
    return out


def _on_cpu(f: StaticFinding, by_display: dict[str, str],
            ancestors: Callable[[str], frozenset[str]] | None,
            reset: frozenset[str], texts: FunctionTexts,
            memos: tuple[dict[str, bool], dict[str, str | None]]) -> StaticFinding:
    """Lower to ``info`` a finding whose store or reader runs only on the CPU platform.
    ``memos``: the pass's memos for :func:`.platforms.source_dropped` (``allocates`` and
    ``emptied``)."""
    if f.severity is Severity.INFO:
        return f
    text = by_display.get(f.file, "")
    body = texts(text, f.function) if text else ""
    start = text.count("\n", 0, text.find(body)) + 1 if body else f.line
    lineage = ancestors(f.cls) if ancestors and f.cls else frozenset({f.cls} - {None})
    context: list[str] = []
    m = re.match(r"\S+ (\S+):(\d+) in (\S+):", f.reader or "")
    if m:
        lines = by_display.get(m.group(1), "").splitlines()
        at = int(m.group(2))
        context = [lines[i - 1] for i in range(at, max(at - 4, 0), -1) if i <= len(lines)]
    why = cpu_only(f.file, lineage, body, f.line - start, m.group(3) if m else None, context)
    if why is None:
        return f
    flag = rerun_guard(body, text, reset)
    if flag and empties_source(body):
        return _cap(f, Severity.INFO, f"runs only on the CPU platform ({why}); its step empties "
                    f"the source parameters it reads and returns early on `{flag}`: both reload "
                    "paths then raise (0 elements against the checkpoint's shape) instead of "
                    "leaving this stale")
    if flag:
        return dataclasses.replace(f, evidence=f"runs only on the CPU platform, but the step "
                                   f"sets `{flag}` and returns early when it is set: a reload "
                                   "reruns it without rebuilding this, so it keeps the first "
                                   "weights")
    dropped = source_dropped(f.derives_from, body, by_display, f.line - start,
                             allocates=memos[0], emptied=memos[1])
    if dropped is None:
        return f
    return _cap(f, Severity.INFO, f"runs only on the CPU platform ({why}): no device graph is "
                "captured there and the reader looks the attribute up on every call"
                + ("" if dropped.startswith("it derives from no") else f"; {dropped}"))


def _judge(f: StaticFinding, index: ReaderIndex, text: str,
           family: Callable[[str], frozenset[str]],
           keepers: dict[frozenset[str], tuple[str, str] | None],
           texts: FunctionTexts) -> StaticFinding:
    if any(m in f.file for m in RELOAD_MACHINERY):
        return _cap(f, Severity.INFO, "inside the engine's reload machinery, which refills the "
                    "layers itself")
    body = texts(text, f.function) if text else ""
    short = f.function.rsplit(".", 1)[-1]
    if f.category is CategoryId.FOLD:
        rerun = None if NOT_READERS.match(short) else index.called_after_load(short)
        if rerun is None:
            return _cap(f, Severity.INFO, "applied once per load: every load path refills the "
                        "parameter before this post-load step runs again")
        return dataclasses.replace(f, reader=str(rerun), reader_kind=rerun.kind,
                                   derives_from=f.owner + "." + f.attr,
                                   evidence=f"can run twice on one load: {short}() is also "
                                   f"called after load")
    owner_root = f.owner.split(".", 1)[0]
    if (owner_root not in ("self", "layer", "") and "." not in f.owner and body
            and not escapes(body, owner_root)):
        return _cap(f, Severity.INFO, f"stored on {owner_root}, an object built in this call "
                    "that never leaves it: nothing reads it after load")
    dropped = _deleted_source(f, body)
    if dropped:
        return _cap(f, Severity.INFO, f"made once from `{dropped}`, which the same step deletes: a "
                    "reload carrying it fails on an unknown name, one without it leaves the value "
                    "right")
    builder = re.match(r"self\.(\w+)\(", f.expr) \
        if f.category is CategoryId.CONTAINER and f.cls else None
    built = texts(text, f"{f.cls}.{builder.group(1)}") if builder else ""
    if builder and tensor_free_builder(f.expr, built, text):
        return _cap(f, Severity.INFO, f"{builder.group(1)}() reads no argument, no torch and no "
                    "tensor attribute: the container holds dtypes and scalars only, nothing a "
                    "reload refills or moves")
    guard = first_run_guard(short, texts(text, f.cls)) if built else None
    if guard and references_only(built):
        return _cap(f, Severity.INFO, f"built only on the first post-load run (its call waits "
                    f"for `{guard}`, which {short}() sets) by {builder.group(1)}(), which hands on "
                    "only references to the layer's attributes: kept parameters both reload paths "
                    "refill in place")
    conditional = _dtype_conditional_reference(f, body) if body else None
    if conditional == "view":
        return _cap(f, Severity.INFO, "a reference to the kept parameter (a dtype view under "
                    "the dtype test): the reload refills it in place")
    # set already: a caller's (.handoff); an attribute post-load code computes named first
    weight = f.derives_from or derives_from(f.expr, body, f.attr, prefer=preferrer(index))
    if f.category is CategoryId.SET_STORAGE:  # a registered parameter: its forward reads it
        return dataclasses.replace(f, derives_from=weight or f"{f.owner}.{f.attr}",
                                   evidence="a parameter of a module, read by its forward")
    if f.store is Store.LOADER_REBIND:
        return _loader_rebind(f, index, body, text, weight)
    refresh = index.refreshed_after_load(f.cls, f.owner, f.attr) \
        if f.store is Store.REFILLED_COPY else None
    if refresh is not None:
        return _cap(dataclasses.replace(f, derives_from=weight), Severity.INFO,
                    f"refreshed from its source where it is used ({refresh}): a kernel-format "
                    "reload's values reach it")
    # a field of the config this builder returns (``quant_config._w2.bias = w2_bias``): the
    # consumer of that field, else the reads of the attribute anywhere
    reader = built_reader(index, text, f.cls, f.function, f.owner, f.attr, family, keepers) \
        if "." in f.owner and owner_root not in ("self", "layer") else None
    if reader is None and f.store is Store.SKIPPED_PARAMETER and f.cls \
            and owner_root != "self":  # a layer's skipped parameter: the class hands it on
        reader = index.parameter_read(f.file, f.cls, f.attr)
    reader = reader or index.reader(f.cls, f.owner, f.attr, f.file)
    if reader is not None and reader.kind is ReaderKind.CONFIG:  # a builder: its config's reader
        reader = built_reader(index, index.text(reader.file), f.cls, reader.function, f.owner,
                              f.attr, family, keepers, read=reader.text) or reader
    if reader is not None and f.owner == "self":
        reader = _sibling_reader(index, f, body, reader)
    if reader is not None and "getattr(" in reader.text:  # a helper's lookup: its caller's use
        reader = returned_lookup(index, reader)
    held = None  # a weight the config's builder hands on (``w1_scale=layer.w13_weight_scale``)
    if reader is None and f.owner == "self":  # handed to an object the class builds
        reader = handed_reader(index, f.cls, f.attr)
    if reader is not None and f.category is CategoryId.CONTAINER and (weight is None
                                                              or reader.file != f.file):
        # a config: the weight its builder fills a field from, and, handed on elsewhere, where
        # the class keeping such configs reads that field
        config = config_reader(index, f.expr, text, f.cls, family, keepers,
                               f.attr if f.owner == "self" else "",
                               f.function.rsplit(".", 1)[-1] if f.function else "")
        if config is not None:
            held = None if weight else config.weight
            reader = config.reader if config.reader and reader.file != f.file else reader
    if reader is None:
        return _cap(dataclasses.replace(f, derives_from=weight), Severity.INFO,
                    "no reader after load: no kernel call, forward or captured path reads it")
    prep = reader.function.rsplit(".", 1)[-1]
    if (weight is None and f.category is CategoryId.CONTAINER
            and f.store is not Store.REFILLED_COPY and index.only_post_load(prep)):
        return _cap(dataclasses.replace(f, reader=str(reader), reader_kind=reader.kind),
                    Severity.INFO, f"derived from no weight and read only by {prep}(), which "
                    "only post-load code calls: read while the weights are prepared, before any "
                    "capture, never by a captured path")
    f = _read_verdict(dataclasses.replace(f, reader=str(reader), reader_kind=reader.kind,
                                          derives_from=weight), conditional, weight)
    if held:
        f = dataclasses.replace(f, derives_from=held, evidence="read after load; it holds "
                                f"`{held}` only as its builder's argument: a reference to "
                                "the layer's parameter, which a reload refills in place (stale "
                                "only through a kernel-format reload after a layerwise one), or "
                                "a product made with it, which a rerun moves")
    if reader.unresolved and reader.bound:
        f = dataclasses.replace(f, evidence=f"{f.evidence}; consumer not resolved: the class "
                                "stores it for the experts class it binds itself, outside its "
                                f"selector ({', '.join(reader.unresolved[:4])}), and none of "
                                "them reads the field: the accessor is named")
    elif reader.unresolved:
        f = dataclasses.replace(f, evidence=f"{f.evidence}; consumer not resolved: "
                                f"{len(reader.unresolved)} experts classes its selector can "
                                f"build fit it equally ({', '.join(reader.unresolved[:4])}"
                                f"{', ...' if len(reader.unresolved) > 4 else ''}): the "
                                "accessor they share is named")
    if reader.handed:
        return dataclasses.replace(f, evidence=f"{f.evidence}; handed on through "
                                   f"{' -> '.join(reader.handed)}")
    return f


_BUILDS_ATTRIBUTE = re.compile(r"self\.\w+(?:\[[^\]\n]*\])?[ \t]*=(?!=)")
_STORE = re.compile(r"[\w.\[\], ]+=(?!=)")


def _sibling_reader(index: ReaderIndex, f: StaticFinding, body: str, reader: Reader) -> Reader:
    """A read of ``self.x`` that only builds another attribute of the object
    (``self.maps[r] = weight_map(self.weight, r)``: a descriptor holding the tensor's address)
    does not read the data: the read, in no store, of an attribute the storing step binds from
    the same local (``self.weight_view = matrix_view(weight)``) is named instead, when there is
    one (``code(self.weight_view, x, y)``)."""
    value = f.expr.strip()
    if not _LOCAL.fullmatch(value) or not _BUILDS_ATTRIBUTE.match(reader.text):
        return reader
    bound = re.compile(rf"^[ \t]*self\.(\w+)[ \t]*=(?!=)[^\n]*(?<![\w.]){value}\b(?![\w.\[(])",
                       re.M)
    for m in bound.finditer(body):
        if m.group(1) == f.attr:
            continue
        sibling = index.reader(f.cls, "self", m.group(1), f.file)
        if sibling is not None and not _STORE.match(sibling.text):
            return sibling
    return reader


def _read_verdict(f: StaticFinding, conditional: str | None,
                  weight: str | None) -> StaticFinding:
    """The severity and evidence of a finding read after load."""
    if f.category is CategoryId.LOADER_BYPASS:
        return dataclasses.replace(f, derives_from=f"{f.owner}.{f.attr} (the checkpoint weight)",
                                   evidence="read after load; its loader writes `.data` around "
                                   "the weight_loader a layerwise reload counts")
    if conditional:
        return _cap(f, Severity.WARNING, "copied only for one dtype: then made once by the "
                    "model-level step no reload reruns, so stale after a reload; with any other "
                    "dtype a reference to the kept parameter, refilled in place")
    if weight is None and f.store is Store.REFILLED_COPY:
        return dataclasses.replace(f, evidence="read after load; no weight named, but the step "
                                   "refills it from its source, so a reload changes that source")
    if weight is None and f.category is not CategoryId.CAPTURED_TENSOR:
        return _cap(f, Severity.WARNING, "read after load but derived from no weight: moved by "
                    "a rerun, never stale")
    return dataclasses.replace(f, evidence="read after load and derived from a weight")


def _loader_rebind(f: StaticFinding, index: ReaderIndex, body: str, text: str,
                   weight: str | None) -> StaticFinding:
    """A weight loader's new Parameter: ``info`` where it still leaves one kept object the
    loader fills in place (:func:`.loaders.refilled_in_place`), or where no reader is found
    and the class hands the submodule only to its pooler (:func:`.loaders.pooler_only`), else
    its module's forward (or the reader found) reads the replaced object."""
    lines = text.splitlines()
    line_text = lines[f.line - 1] if 0 < f.line <= len(lines) else ""
    why = refilled_in_place(f.attr, f.expr, body, line_text)
    if why:
        return _cap(f, Severity.INFO, why)
    reader = index.reader(f.cls, f.owner, f.attr, f.file)
    pooler = pooler_only(f.owner, function_text(text, f.cls)) if reader is None and f.cls else None
    if pooler:
        return _cap(f, Severity.INFO, f"`{f.owner}` is handed only to the pooler ({pooler}()), "
                    "which runs outside the captured forward and looks the rebound Parameter up "
                    "on each call")
    return dataclasses.replace(
        f, reader=str(reader) if reader else None,
        reader_kind=reader.kind if reader else None,
        derives_from=weight or f"{f.owner}.{f.attr}",
        evidence="a weight loader binds a new Parameter on every load: the module's forward "
        "reads the object a captured graph holds, which the next load replaces")
