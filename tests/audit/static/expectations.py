"""Shared data of the static-audit tests: fixture paths and the hand-written expectations.

Expected findings are written out by hand below (file, line, attribute, category); the corpus
files also mark each site with ``# expect: CATEGORY`` and a test checks both agree.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CORPUS = FIXTURES / "static_corpus"
EVIDENCE_CORPUS = FIXTURES / "static_corpus_evidence"
SPECS = FIXTURES / "static_specs"
SARIF_SCHEMA = FIXTURES / "sarif" / "sarif-schema-2.1.0.json"

# (line, attribute, category) per corpus file, written by hand from the corpus sources.
EXPECTED: dict[str, set[tuple[int, str, str]]] = {
    "loader_bypass.py": {
        (10, "sink_weight", "loader-bypass"),
    },
    "experts_init.py": {
        (23, "ab_strides1", "tensor-attr"),
        (24, "ab_strides2", "tensor-attr"),
        (25, "c_strides2", "alias"),
        (31, "s_strides1", "tensor-attr"),
        (39, "_g1_alphas", "tensor-attr"),
        (40, "_g1_scale_c", "tensor-attr"),
        (43, "per_token_global_scale", "tensor-attr"),
    },
    "quant_method.py": {
        (21, "w13_weight", "replace-layout"),
        (24, "w13_weight_scale", "replace-layout"),
        (25, "a1_gscale", "register"),
        (27, "w2_weight", "data-rebind"),
        (28, "w13_bias", "set-storage"),
        (30, "g1_alphas", "tensor-attr"),
        (31, "input_scale_float", "host-scalar"),
        (32, "a2_scale_float", "host-scalar"),
        (34, "fn", "captured-tensor"),
        (37, "lam", "captured-tensor"),
        (43, "scaled_fn", "captured-tensor"),
        (46, "w13_input_scale", "fold"),  # copy_ of its own max
        (47, "w2_weight_scale", "fold"),  # torch.mul(p, c, out=p)
        (49, "w13_weight_scale", "fold"),  # mul_
        (51, "w13_weight_scale", "fold"),  # *=
        (68, "v_scale_buf", "register"),  # line 61 is dead: every caller passes False
        (75, "w13_weight", "replace-layout"),  # padded: a new tensor with an explicit shape
        (78, "w2_scale", "replace-layout"),  # a bounded slice; line 77's gather keeps the shape
    },
    "transitive.py": {
        (10, "consts", "tensor-attr"),
        (29, "w_t", "tensor-attr"),
        (39, "alpha", "tensor-attr"),
        (40, "inv", "tensor-attr"),
        (41, "kernel_scale", "tensor-attr"),
    },
    "model_load.py": {
        (24, "_fused_kv_weight", "tensor-attr"),
        (26, "_k_norm_weights", "tensor-attr"),
        (27, "_hidden_norm_weight", "alias"),
    },
    "setattr_cases.py": {
        (11, "w_packed", "tensor-attr"),
        (13, "w13_weight_scale", "tensor-attr"),
        (13, "w2_weight_scale", "tensor-attr"),
        (17, "w13_weight", "data-rebind"),
        (17, "w2_weight", "data-rebind"),
        (19, "weight", "set-storage"),
        (21, "w13_scale", "register"),  # an f-string over a loop of literal names
        (21, "w2_scale", "register"),
        (25, "w_view", "alias"),  # .detach() shares the storage: a reference, not a new tensor
    },
    "aliases_imports.py": {
        (17, "g1_scale_c", "alias"),
        (18, "w_cat", "tensor-attr"),
        (19, "w_pad", "tensor-attr"),
        (20, "ones", "tensor-attr"),
        (23, "padded", "tensor-attr"),
        (28, "w1_weight_t", "tensor-attr"),
    },
    "declared.py": {
        (15, "gemm1_alpha", "tensor-attr"),
        (16, "gemm1_beta", "tensor-attr"),
        (17, "undeclared_const", "tensor-attr"),
        (27, "input_scale_inv", "register"),
        (28, "other_inv", "tensor-attr"),
        (32, "consts", "tensor-attr"),
        (36, "fused", "tensor-attr"),
        (41, "_k_scale_float", "host-scalar"),
        (46, "method_scale", "tensor-attr"),
    },
    "canary.py": {
        (8, "canary_strides", "tensor-attr"),
    },
    # Reach rules: each has true positives (sites) and false positives (look-alikes not reached,
    # or not derived state) in the same file.
    "reach_receivers.py": {
        (12, "_fused_kv", "tensor-attr"),  # self.model.build_fused(): the attribute's class
        (33, "_fused_input_scale", "tensor-attr"),  # layer.m(): one class of the tree has m
        (38, "_narrowed_t", "tensor-attr"),  # isinstance(layer, NarrowedLinear) narrows it
    },
    "cross_a.py": {
        (17, "scale_f", "host-scalar"),  # a `-> float` helper of another file, given a tensor
        (19, "desc", "container"),  # a helper of another file returning a tensor dataclass
        (21, "desc2", "container"),  # a tensor dataclass of another file
        (22, "w_t", "tensor-attr"),
    },
    "cross_b.py": {
        (20, "_table", "tensor-attr"),  # reached from cross_a.py through `cross_b.build_table`
        (25, "weight", "set-storage"),  # a .set_() fusion reached from another file
    },
    "lazy_and_containers.py": {
        (13, "_fused_qk", "lazy-cache"),
        (17, "_norm_stack", "lazy-cache"),
        (34, "scale_list", "container"),
        (35, "by_name", "container"),
        (37, "cache", "container"),
        (39, "chunks", "container"),
        (50, "_packed", "tensor-attr"),  # a closure assigned over process_weights_after_loading
    },
    "folds.py": {
        (14, "weight", "fold"),  # the Muse Spark router fold, reached from load_weights
        (25, "weight", "fold"),
        (26, "bias", "fold"),
        (27, "weight_scale", "fold"),
        (28, "w2_weight", "fold"),
        (33, "tmp_scale", "tensor-attr"),
    },
    "severity_cases.py": {
        (13, "weight", "replace-layout"),
        (14, "inv_scale", "register"),
        (15, "inv_np", "register"),
        (16, "packed", "tensor-attr"),
        (17, "plain_t", "tensor-attr"),
        (18, "method_t", "tensor-attr"),
        (19, "placeholder", "tensor-attr"),
        (21, "<name>", "dynamic-name"),
        (26, "_q_scale_inv", "register"),
        (27, "_k_scale_float", "host-scalar"),
    },
    "reload_refinements.py": {
        (16, "w_view", "tensor-attr"),
        (17, "w_copy", "tensor-attr"),
        (19, "s_view", "tensor-attr"),
        (20, "routing", "tensor-attr"),
        (22, "routing_scale", "tensor-attr"),
        (23, "token_table", "tensor-attr"),
        (28, "gemm1_beta", "tensor-attr"),
        # line 29, `self._gemm1_beta_unfolded = self.gemm1_beta`: a same-object snapshot, no site
        (30, "alpha_ref", "alias"),
        (42, "_w_view", "tensor-attr"),
        (43, "_w_upcast", "tensor-attr"),
        (44, "_cos", "tensor-attr"),
        (45, "_workspace", "tensor-attr"),
    },
    "review_fixes.py": {
        (23, "w_zp", "tensor-attr"),
        (24, "g_idx_sort", "tensor-attr"),
        (25, "w_scratch", "tensor-attr"),
        # lines 38-39: a padded copy written back with the pad sliced away: idempotent
        (40, "w13_weight_scale", "fold"),
        (41, "w2_weight_scale", "fold"),
        (47, "_rope_cos_sin_cache", "alias"),
        (48, "_q_norm_weight", "alias"),
        (56, "weight", "set-storage"),
        (57, "weight", "set-storage"),
        (58, "_fused_compressor_weight", "tensor-attr"),
        (64, "weight", "set-storage"),
        (70, "_views", "lazy-cache"),
        (75, "_upcast", "lazy-cache"),
        # line 77: a lazily built constant (ones/zeros): no weight in it
        (83, "_workspace", "tensor-attr"),
        (84, "_peer_ptrs", "tensor-attr"),
        (89, "_workspace", "tensor-attr"),
        (90, "_w_t", "tensor-attr"),
        (108, "alpha", "register"),  # line 110: the else branch of isinstance(alpha, Tensor)
        (114, "beta_t", "tensor-attr"),  # line 112: the `not isinstance` branch
        (125, "_k_scale", "register"),
        (126, "_k_inv", "register"),
    },
}

# The causes of the seed-2611 review's false positives (review_fixes.py): each rule's false
# positive is info now, next to a true positive it keeps.
REVIEW_FIXES = {
    (23, "w_zp"): ("info", "placeholder"),  # a helper of another file returns Parameter(empty(0))
    (24, "g_idx_sort"): ("info", "placeholder"),  # a same-file helper returning empty((0,))
    (25, "w_scratch"): ("warning", "layer-attribute"),  # 16 zeros: no placeholder, no weight
    # a helper that permutes, an index that permutes: folds, applied once per load (info)
    (40, "w13_weight_scale"): ("info", "in-place-fold"),
    (41, "w2_weight_scale"): ("info", "in-place-fold"),
    (47, "_rope_cos_sin_cache"): ("info", "not-from-weights"),  # a rotary cache, by reference
    (48, "_q_norm_weight"): ("warning", "reference"),  # a weight, by reference
    (56, "weight"): ("info", "initial-load-kept"),  # .set_() once, at initial load
    (57, "weight"): ("info", "initial-load-kept"),
    (58, "_fused_compressor_weight"): ("info", "initial-load-kept"),  # kept params view it
    (64, "weight"): ("warning", "storage-swap"),  # a layer hook: the swap reruns per reload
    (70, "_views"): ("info", "view-of-kept"),  # views of kept storage, made lazily
    (75, "_upcast"): ("error", "lazy-cache"),  # copies of the weights, made lazily
    (83, "_workspace"): ("info", "built-at-construction"),  # built in a module's __init__
    (84, "_peer_ptrs"): ("info", "built-at-construction"),
    (89, "_workspace"): ("warning", "object-attribute"),  # built in post-load code; no weight
    (90, "_w_t"): ("error", "object-attribute"),
    (108, "alpha"): ("error", "non-persistent-buffer"),
    (114, "beta_t"): ("error", "layer-attribute"),
    (125, "_k_scale"): ("info", "view-of-kept"),  # a buffer over the kept k_scale's storage
    (126, "_k_inv"): ("error", "live-attention-tensor"),  # a new tensor replaces the live one
}

# What the value is and whether its code reruns, per site of reload_refinements.py: each rule
# has a true positive (still error/warning) next to the false positive it now clears (info).
REFINED = {
    # a view of layer.weight made by a layer kernel's step, which a reload runs on its
    # temporaries: the view aliases the temporary, as a reference to it would
    (16, "w_view"): ("warning", "reference"),
    (17, "w_copy"): ("error", "layer-attribute"),  # the same chain made contiguous: a new copy
    (19, "s_view"): ("error", "layer-attribute"),  # a view of a fresh tensor: not kept storage
    (20, "routing"): ("info", "not-from-weights"),  # a routing map, cast: no weight in it
    (22, "routing_scale"): ("error", "layer-attribute"),  # routing map times a weight scale
    (23, "token_table"): ("warning", "layer-attribute"),  # torch.tensor per rerun: moves
    (28, "gemm1_beta"): ("warning", "object-attribute"),  # the snapshot's source: no weight
    (30, "alpha_ref"): ("warning", "reference"),  # another holder's tensor: still a reference
    (42, "_w_view"): ("info", "initial-load-kept"),  # model-level hook: a view, made once
    (43, "_w_upcast"): ("error", "initial-load-copy"),  # model-level hook: a copy, never redone
    (44, "_cos"): ("info", "initial-load-kept"),  # model-level hook: a rotary cache
    (45, "_workspace"): ("info", "initial-load-kept"),  # model-level hook: a workspace, once
}

# vLLM 0.33's reload semantics, per site of severity_cases.py: (line, attr) -> (severity, store).
SEVERITIES = {
    (13, "weight"): ("info", "layer-parameter"),  # replace_parameter: the copy-back refills it
    (14, "inv_scale"): ("info", "layer-parameter"),  # a persistent buffer of the layer
    (15, "inv_np"): ("error", "non-persistent-buffer"),  # never refilled unless loaded
    (16, "packed"): ("info", "layer-parameter"),  # a Parameter set on a module is registered
    (17, "plain_t"): ("error", "layer-attribute"),
    (18, "method_t"): ("error", "object-attribute"),  # on the quant method
    (19, "placeholder"): ("info", "placeholder"),  # 0 elements: nothing to go stale
    (21, "<name>"): ("error", "layer-attribute"),  # a computed name: its own category
    (26, "_q_scale_inv"): ("error", "live-attention-tensor"),  # attention runs on live tensors
    (27, "_k_scale_float"): ("error", "host-scalar"),
}

# Sites of declared.py that static_specs/declared.yaml declares: (line, attr) -> spec name.
DECLARED = {
    (15, "gemm1_alpha"): "corpus-experts-subclass",  # through a subclass of the site's class
    (16, "gemm1_beta"): "corpus-experts-base",  # through a base class, qualified name in YAML
    (27, "input_scale_inv"): "corpus-linear-method",
    (32, "consts"): "corpus-linear-method",  # a same-file helper, matched by its root's class
    (36, "fused"): "corpus-free-load-weights",  # a free function: by name and empty owner
    # Through the object graph: a spec on the Attention layer declares what the KV-cache quant
    # method writes onto its layer; a spec with owner `quant_method` declares `self.x` there.
    (41, "_k_scale_float"): "corpus-attention-host-scale",
    (46, "method_scale"): "corpus-quant-method-owner",
}


def planted_copy(source: Path, directory: Path, old: str, new: str) -> Path:
    """Copy ``source`` into ``directory`` with its one ``old`` text replaced by ``new`` (a planted
    change for a canary); fails when ``old`` is not there exactly once."""
    text = source.read_text()
    assert text.count(old) == 1, f"{source.name}: {old!r} occurs {text.count(old)} times"
    path = directory / source.name
    path.write_text(text.replace(old, new))
    return path


def findings_by_owner(path: Path) -> dict[tuple[str | None, str], object]:
    """The static findings of one corpus file, keyed by (class, attribute)."""
    return {(f.cls, f.attr): f for f in scan([path], specs=[], jobs=1).findings}


_CASE_MARK = re.compile(r"# (reads|old reader): (\w+)")


def readers_at(files: list[Path], attrs: tuple[str, ...],
               severity: object) -> dict[str, tuple[str, int] | None]:
    """The reader (file name, line) the scan of ``files`` names for each of ``attrs``, each
    finding asserted at ``severity`` (evidence rules never move it); None where none is named."""
    out: dict[str, tuple[str, int] | None] = {}
    for f in scan(files, specs=[], jobs=1).findings:
        if f.attr in attrs:
            assert f.severity is severity, f.attr
            m = re.search(r"(\w+\.py):(\d+) in ", f.reader or "")
            out[f.attr] = (m.group(1), int(m.group(2))) if m else None
    assert set(out) == set(attrs)
    return out


@dataclass(frozen=True)
class EvidenceCase:
    """One file of the evidence corpus, as the recall-class tests read and plant it."""

    name: str

    @property
    def path(self) -> Path:
        return EVIDENCE_CORPUS / self.name

    def line(self, text: str) -> int:
        """The 1-based line of ``text`` in the file."""
        source = self.path.read_text()
        return source.count("\n", 0, source.index(text)) + 1

    def marks(self, kind: str) -> dict[str, int]:
        """The ``# reads: ATTR`` (``kind`` "reads") or ``# old reader: ATTR`` marks of the file:
        attribute -> 1-based line."""
        return {m.group(2): n for n, line in enumerate(self.path.read_text().splitlines(), 1)
                for m in _CASE_MARK.finditer(line) if m.group(1) == kind}

    def findings(self, attrs: tuple[str, ...]) -> dict[str, object]:
        """The findings of this file alone for ``attrs``: attribute -> finding (each must stay
        an error: the evidence corrections change readers only)."""
        out = {}
        for f in scan([self.path], specs=[], jobs=1).findings:
            if f.attr in attrs:
                assert f.severity is Severity.ERROR, f.attr
                out[f.attr] = f
        return out

    def reader_lines(self, attrs: tuple[str, ...]) -> dict[str, int | None]:
        """The line in this file of each of ``attrs``' named reader (None: named elsewhere or
        not at all)."""
        pattern = re.compile(rf"{re.escape(self.name)}:(\d+) in ")
        return {attr: int(m.group(1)) if (m := pattern.search(f.reader or "")) else None
                for attr, f in self.findings(attrs).items()}

    def planted(self, tmp_path: Path, old: str, new: str) -> dict[tuple[str | None, str], object]:
        """The findings of a copy of the corpus with ``old`` replaced by ``new`` in this file."""
        dst = tmp_path / "corpus"
        shutil.copytree(EVIDENCE_CORPUS, dst)
        return findings_by_owner(planted_copy(self.path, dst, old, new))


def site(report, suffix: str, line: int, attr: str):
    """The one finding of ``report`` at ``line`` of the file ending with ``suffix`` for
    ``attr``."""
    (f,) = [f for f in report.findings
            if f.file.endswith(suffix) and f.line == line and f.attr == attr]
    return f


_READER_MARK = re.compile(r"# (reads|other reader): ([a-z_]\w*)")


def reader_marks(files: list[Path], kind: str) -> dict[str, set[tuple[str, int]]]:
    """The ``# reads: ATTR`` (``kind`` "reads") or ``# other reader: ATTR`` marks of the
    reader corpus ``files``: attribute -> {(file name, 1-based line)}."""
    out: dict[str, set[tuple[str, int]]] = {}
    for path in files:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for m in _READER_MARK.finditer(line):
                if m.group(1) == kind:
                    out.setdefault(m.group(2), set()).add((path.name, n))
    return out
