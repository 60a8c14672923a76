"""The static audit: find derived tensors that post-load code stores and no spec declares.

It reads Python source with :mod:`ast` and never imports the scanned code. Post-load code is
``process_weights_after_loading``, ``load_weights``, ``post_load_weights``, constructors of
objects that post-load code rebuilds (experts, kernels, quant configs, ...), functions assigned
over a post-load method, and every function they call, in the same file (:mod:`.scope`)
and, through a tree-wide index (:mod:`.index`), in other files: a second round audits
those. In it, the rules of :mod:`.rules` find the statements that store derived state
(plus lazy caches in any method); each site gets a severity from the engine's reload semantics
(:mod:`.semantics`; weight-free values of rebuilt-object constructors whose class the
tree builds only outside post-load code are cleared through :mod:`.construction`) and is
matched against the spec library (:mod:`.match`).

Example::

    from derivgraph.audit.static.scan import scan
    report = scan(package="vllm")
    for f in report.undeclared():
        print(f.location, f.attr, f.category, f.reason)
"""

from __future__ import annotations

import ast
import contextlib
import gc
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from derivgraph.audit.static.construction import built_at_construction
from derivgraph.audit.static.evidence import apply_evidence, function_text
from derivgraph.audit.static.finding import SourceFile, StaticFinding, StaticReport
from derivgraph.audit.static.forked import CoresUsed, ForkedPool, workers_for
from derivgraph.audit.static.forwarded import mirror_forwarded, resolve_forwarded
from derivgraph.audit.static.index import merged_index
from derivgraph.audit.static.match import SpecIndex, suggest_spec
from derivgraph.audit.static.module import ExternalRoot, ModuleContext, audit_module
from derivgraph.audit.static.reload_skips import mark_reload_skipped, skip_set
from derivgraph.audit.static.scope import (
    ancestors_index,
    is_constructor_root,
    is_rebuilt_lineage,
)
from derivgraph.audit.static.segments import BlockParses
from derivgraph.audit.static.semantics import semantics_of
from derivgraph.audit.static.sites import CategoryId, RawSite
from derivgraph.audit.static.sources import collect_files, locate_package
from derivgraph.audit.static.tree_facts import TREE_FACTS_PER_WORKER, FileFacts, tree_facts
from derivgraph.errors import PackageNotFound
from derivgraph.spec.load import default_specs
from derivgraph.spec.model import Spec

__all__ = [
    "PackageNotFound",
    "Progress",
    "SourceFile",
    "StaticFinding",
    "StaticReport",
    "collect_files",
    "locate_package",
    "scan",
    "scan_files",
]

logger = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]
"""Progress callback: (files done, files to audit, the file just done)."""

# ---- the tree-wide context -----------------------------------------------------------------------

def _context(texts: Sequence[tuple[SourceFile, str]], facts: Sequence[FileFacts]) -> ModuleContext:
    bases: dict[str, set[str]] = {}
    tensor_functions: dict[str, str] = {}
    for (src, _), found in zip(texts, facts):
        for cls, cls_bases in found.classes:
            bases.setdefault(cls, set()).update(cls_bases)
        for name, annotation in found.tensor_functions:
            tensor_functions[f"{src.module}.{name}" if src.module else name] = annotation
    ancestors = ancestors_index(bases)
    index = merged_index([(src.module, found.index) for (src, _), found in zip(texts, facts)],
                         ancestors)
    containers = index.containers()
    return ModuleContext(ancestors, tensor_functions, index, index.scalar_functions(),
                         containers | index.container_functions(containers),
                         index.placeholder_functions(),
                         frozenset(i for i, found in enumerate(facts) if found.staging))


CONTENDED_CORES = 1.3
"""Below this many cores used by the forked tree facts (:class:`.forked.CoresUsed`), the
default ``jobs`` runs the rest of the scan in one process: on this project's 2-CPU host
under other guests' load the two workers used 0.6-1.1 cores, and one process took 1-2 s less
CPU and less wall time than two; unloaded, they use 1.5 or more."""


def jobs_after_tree_facts(jobs: int | None, workers: int, cores: float) -> int | None:
    """The ``jobs`` for the rest of the scan: 1 where ``jobs`` was left to the default, the
    tree facts ran in ``workers`` forked workers and together they used fewer than
    :data:`CONTENDED_CORES` cores; else ``jobs`` as given."""
    if jobs is None and workers > 1 and cores < CONTENDED_CORES:
        logger.info("static audit: the forked tree facts used %.2f cores; the host is "
                    "contended, the rest runs in this process", cores)
        return 1
    return jobs


def _is_candidate(text: str, facts: FileFacts, context: ModuleContext) -> bool:
    """Whether a file can hold post-load code (cheap text test before parsing)."""
    if facts.rooted or facts.staging:
        return True
    if "def __init__" not in text:
        return False
    for cls, _ in facts.classes:
        lineage = context.ancestors.get(cls, frozenset({cls}))
        if is_rebuilt_lineage(lineage):
            return True
    return False


# ---- auditing ------------------------------------------------------------------------------------

_Reach = list[tuple[str | None, str]]  # (class, function) reached from post-load methods
_Result = tuple[list[RawSite], list[ExternalRoot], _Reach, str | None]
_Job = tuple[int, tuple[ExternalRoot, ...]]  # (file index, extra roots: empty for its own roots)
MAX_ROUNDS = 6
"""Rounds of following calls into other files (each round reaches one call deeper)."""


@contextlib.contextmanager
def young_collections_only() -> Iterator[None]:
    """Pause the automatic cyclic garbage collector for the scan, restoring its state after.

    Its full collections walk every object the scan keeps (the tree index, the texts' parsed
    blocks) again and again, about a sixth of the scan's CPU time; instead the audit of each
    file collects the youngest generation (:func:`_audit_one`), which holds that audit's
    cyclic garbage, so memory stays as low as with the collector on. Forked workers inherit
    the pause and so do not copy the parent's pages by walking them. At the end, the objects
    the young generations hold are promoted to the oldest without a walk
    (:func:`promote_survivors`)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        promote_survivors()
        if was_enabled:
            gc.enable()


def promote_survivors() -> None:
    """Move every object of the young generations to the oldest one, without walking them.

    Each :func:`gc.collect` ``(0)`` of the scan moves its survivors (the tree index, texts,
    tables: whatever the parent built) to the middle generation and counts one more towards
    its next collection, so the first automatic collection after the scan walks all of them
    (about 0.3 s). The oldest generation is walked only when it has grown by a quarter, so
    they wait there; garbage among them is freed by refcounting or by that full collection.
    Done with ``gc.freeze()``/``gc.unfreeze()`` (two list splices), and only where nothing
    else is frozen: unfreezing would otherwise thaw a caller's frozen objects too."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def _audit_one(src: SourceFile, text: str, context: ModuleContext, index: int,
               extra: tuple[ExternalRoot, ...] = (), parses: BlockParses | None = None
               ) -> _Result:
    try:
        sites, externals, reach = audit_module(text, src.display, src.module, src.is_package,
                                               context, extra=extra, file_index=index,
                                               parses=parses)
        return sites, externals, reach, None
    except SyntaxError as exc:
        return [], [], [], f"{src.display}:{exc.lineno or 0}: not parsed ({exc.msg}); skipped"
    except RecursionError:
        return [], [], [], f"{src.display}: too deeply nested to audit; skipped"
    finally:
        if not gc.isenabled():  # under young_collections_only: this audit's cyclic garbage
            gc.collect(0)


def _read(src: SourceFile) -> str | None:
    try:
        return src.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("%s: cannot read (%s); skipped", src.display, exc)
        return None


def scan_files(files: Sequence[SourceFile], specs: Sequence[Spec] = (),
               jobs: int | None = None, progress: Progress | None = None,
               declared_folds: Iterable[tuple[str, str]] = (),
               changed: frozenset[Path] | None = None) -> StaticReport:
    """Audit the given files, follow their calls into each other, and match every site
    against ``specs``. With ``changed`` (resolved paths), only those files are audited and
    reported; every file still feeds the tree index and the reader search. ``jobs``: forked
    workers; by default one per CPU, and one process after the tree facts where their workers
    found the CPUs contended (:func:`jobs_after_tree_facts`); the report is the same."""
    with young_collections_only():
        return _scan_files(files, specs, jobs, progress, declared_folds, changed)


def _scan_files(files: Sequence[SourceFile], specs: Sequence[Spec], jobs: int | None,
                progress: Progress | None, declared_folds: Iterable[tuple[str, str]],
                changed: frozenset[Path] | None) -> StaticReport:
    start = time.perf_counter()
    texts = [(src, text) for src in files if (text := _read(src)) is not None]
    meter = CoresUsed()
    facts = tree_facts([(src.module, text) for src, text in texts], jobs)
    jobs = jobs_after_tree_facts(jobs, workers_for(len(texts), jobs, TREE_FACTS_PER_WORKER),
                                 meter.cores())
    context = _context(texts, facts)
    keep = [changed is None or src.path.resolve() in changed for src, _ in texts]
    candidates = [i for i, (_, text) in enumerate(texts)
                  if keep[i] and _is_candidate(text, facts[i], context)]
    del facts
    logger.info("static audit: %d files, %d with post-load code", len(texts), len(candidates))
    report = StaticReport(files_scanned=len(texts), files_audited=len(candidates),
                          specs=len(specs))
    with _Rounds(texts, context, jobs) as rounds:  # its workers serve every round
        first = rounds.run([(i, ()) for i in candidates], progress)
        failed = {i for i, (_, _, _, error) in zip(candidates, first) if error}
        report.files_parsed = len(candidates) - len(failed)
        if not report.files_parsed:  # tell an unparsable tree from one without post-load code
            chosen = set(candidates)
            pool = [t for i, t in enumerate(texts) if i not in chosen and keep[i]]
            # with ``changed`` and no changed file, the tree was read and nothing is to audit
            report.files_parsed = _check_parse(pool, report) if pool or changed is None \
                else len(texts)
        sites: dict[tuple[int, int, int, str, str], tuple[int, RawSite]] = {}
        pending: list[ExternalRoot] = []
        post_load: set[tuple[int, str | None, str]] = set()
        for i, (found, externals, reach, error) in zip(candidates, first):
            post_load.update((i, cls, func) for cls, func in reach)
            if error:
                logger.warning("%s", error)
                report.errors.append(error)
            for site in found:
                sites.setdefault((i, site.line, site.col, site.attr, site.category), (i, site))
            pending += externals
        seen = {(i, None, None, (), False) for i in candidates}
        for _ in range(MAX_ROUNDS):
            grouped: dict[int, list[ExternalRoot]] = {}
            for ext in pending:
                key = (ext.file, ext.cls, ext.func, ext.handed, ext.model_load_only)
                if key not in seen and ext.file not in failed:
                    seen.add(key)  # type: ignore[arg-type]
                    grouped.setdefault(ext.file, []).append(ext)
            if not grouped:
                break
            order = sorted(grouped)
            results = rounds.run([(i, tuple(grouped[i])) for i in order])
            pending = []
            for i, (found, externals, reach, error) in zip(order, results):
                if error:
                    logger.debug("%s", error)
                    continue
                post_load.update((i, cls, func) for cls, func in reach)
                for site in found:
                    key = (i, site.line, site.col, site.attr, site.category)
                    if key in sites and sites[key][1].model_load_only and not site.model_load_only:
                        del sites[key]  # also reached from post-load code: that reach counts
                    sites.setdefault(key, (i, site))
                pending += externals
    index = SpecIndex(specs, context.ancestors, declared_folds)
    forwarded = resolve_forwarded(sites, lambda i, cls: function_text(texts[i][1], cls),
                                  context.family)
    _mark_built_once(sites, texts, post_load, context)
    mark_reload_skipped(sites, skip_set((src.display, text) for src, text in texts))
    findings = [_finding(texts[i][0], site, index) for i, site in sites.values() if keep[i]]
    report.findings = apply_evidence(findings, [(src.display, text) for src, text in texts],
                                     post_load, context.family,
                                     lambda c: context.ancestors.get(c, frozenset({c})),
                                     frozenset(n for n in context.containers if "." in n
                                               and n.split(".", 1)[0] in context.tree.classes),
                                     jobs=jobs)
    report.findings = mirror_forwarded(report.findings, forwarded,
                                       {src.display: i for i, (src, _) in enumerate(texts)})
    report.findings.sort(key=lambda f: (f.file, f.line, f.col, f.attr, f.category))
    report.seconds = time.perf_counter() - start
    return report


def _mark_built_once(sites: dict[Any, tuple[int, RawSite]],
                     texts: Sequence[tuple[SourceFile, str]],
                     post_load: set[tuple[int, str | None, str]],
                     context: ModuleContext) -> None:
    """Mark the weight-free sites, and the references and views of kept tensors, of
    rebuilt-object constructors whose class the tree builds only outside post-load code
    (:mod:`.construction`): built once, never rerun, so a reference points at the kept tensor
    the reload refills in place."""
    def built_class(site: RawSite) -> str | None:
        root = site.via[0] if site.via else ""
        shares = site.view_of_kept or site.category is CategoryId.ALIAS
        if (site.from_weights and not shares) or not is_constructor_root(root,
                                                                         context.ancestors):
            return None
        return root.rpartition(".")[0]

    candidates = {c for _, site in sites.values() if (c := built_class(site))}
    if not candidates:
        return
    once = built_at_construction(candidates, [text for _, text in texts], post_load,
                                 context.tree.subclasses)
    for key, (i, site) in sites.items():
        if built_class(site) in once:
            sites[key] = (i, replace(site, built_once=True))


def _check_parse(texts: Sequence[tuple[SourceFile, str]], report: StaticReport) -> int:
    """With no post-load code anywhere, parse every file so that an unparsable tree is told
    apart from a clean one; returns how many parsed."""
    parsed = 0
    for src, text in texts:
        try:
            ast.parse(text, filename=src.display)
            parsed += 1
        except SyntaxError as exc:
            report.errors.append(f"{src.display}:{exc.lineno or 0}: not parsed ({exc.msg})")
    return parsed


class _Rounds:
    """The audits of the scan's rounds, in this process or, from the first round worth
    several workers, in forked workers kept for the rounds after (:class:`.forked.ForkedPool`):
    no fork per round, and a file audited again goes to the worker that audited it before,
    which reuses the blocks it parsed then (:class:`.segments.BlockParses`)."""

    def __init__(self, texts: list[tuple[SourceFile, str]], context: ModuleContext,
                 jobs: int | None) -> None:
        self.jobs = jobs
        self.parses = BlockParses()  # this process's; each worker fills its own copy
        self.pool: ForkedPool[_Job, _Result] | None = None
        self._stack = contextlib.ExitStack()

        def work(items: list[_Job]) -> list[_Result]:
            return [_audit_one(*texts[i], context, i, extra, self.parses)
                    for i, extra in items]

        self.work = work
        self.texts = texts

    def __enter__(self) -> _Rounds:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.__exit__(*exc)  # type: ignore[arg-type]

    def run(self, jobs_list: list[_Job], progress: Progress | None = None) -> list[_Result]:
        """The audit of each ``(file, extra roots)`` of ``jobs_list``, in order."""
        total = len(jobs_list)
        if self.pool is None and workers_for(total, self.jobs, 16) > 1:
            self.pool = self._stack.enter_context(
                ForkedPool(self.work, workers_for(total, self.jobs, 16)))
        results: list[_Result] = [([], [], [], None)] * total
        done = 0
        chunks = self.pool.map(jobs_list, 8, key=_file_of) if self.pool is not None else (
            ([k], self.work([job])) for k, job in enumerate(jobs_list))
        for chunk, found in chunks:
            for k, result in zip(chunk, found):
                results[k] = result
                done += 1
                if progress:
                    progress(done, total, self.texts[jobs_list[k][0]][0].display)
        return results


def _file_of(job: _Job) -> int:
    return job[0]


def _finding(src: SourceFile, site: RawSite, index: SpecIndex) -> StaticFinding:
    spec = index.match(site)
    rule = semantics_of(site)
    category, reason = site.category, site.reason
    if site.attr.startswith("<"):
        category = CategoryId.DYNAMIC_NAME
        reason = f"{site.category} with a computed name: {reason}"
    holder = site.cls or site.function
    return StaticFinding(
        file=src.display, line=site.line, col=site.col, attr=site.attr, category=category,
        reason=reason, cls=site.cls, function=site.function, owner=site.owner,
        expr=site.expr, kind=site.kind, via=site.via, declared=spec is not None, spec=spec,
        suggestion=None if spec or category is CategoryId.DYNAMIC_NAME else suggest_spec(site,
                                                                                src.display),
        root=src.root, severity=rule.severity, store=rule.store, derives_from=site.derives,
        consequence=rule.consequence, fix=rule.fix,
        qualname=f"{src.module}.{holder}" if src.module else holder, rule_round=site.rule_round,
    )


def scan(paths: Iterable[str | Path] = (), package: str | None = None,
         specs: Sequence[Spec] | None = None, jobs: int | None = None,
         progress: Progress | None = None,
         declared_folds: Iterable[tuple[str, str]] = (),
         changed: frozenset[Path] | None = None) -> StaticReport:
    """Scan files, folders and/or an installed package; ``specs`` default to the library.

    ``declared_folds``: ``(class short name, parameter name)`` pairs of in-place folds declared
    outside the spec library (fold sites they name are declared). ``changed``: audit and report
    only these files (resolved paths; :func:`.changed.changed_files`). ``jobs``: as in
    :func:`scan_files`."""
    if specs is None:
        specs = default_specs()
    files = collect_files(paths, package)
    report = scan_files(files, specs, jobs=jobs, progress=progress,
                        declared_folds=declared_folds, changed=changed)
    if any(f.root == "SRCROOT" for f in files):
        report.roots["SRCROOT"] = str(Path.cwd())
    if package:
        report.roots["PKGROOT"] = str(locate_package(package).parent)
    return report
