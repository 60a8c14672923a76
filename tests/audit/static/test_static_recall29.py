"""Recall class of issue 21 (rules29, ``recall29_cases.py``): a constructor keeps a value that a
post-load step rebuilds and hands to it (vLLM's experts base class keeping the quant method's
``moe_quant_config``, built through a builder with the experts class as a type argument). A true
positive at the base class's store, false-positive twins (a value built once at init, another
parameter kept, an object built outside post-load code, a plain int kept), and canaries that
remove the rule, widen it, or plant each twin's reason away."""

from __future__ import annotations

import re

from derivgraph.audit.static import handoff as handoff_module
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EvidenceCase, findings_by_owner

CASE = EvidenceCase("recall29_cases.py")


def _scan() -> dict[tuple[str | None, str], object]:
    """(class, attribute) -> the finding of the corpus file (one per pair there)."""
    return findings_by_owner(CASE.path)


_planted, _line = CASE.planted, CASE.line


def _loud(got) -> set[tuple[str | None, str]]:
    return {k for k, f in got.items() if f.severity is not Severity.INFO}


_TWINS = {("Kp29OnceExperts", "once_config"), ("Kp29OtherExperts", "name_config"),
          ("Kp29OtherExperts", "other_label"), ("Kp29InitExperts", "init_config"),
          ("Kp29IntExperts", "int_config")}


# ---- the true positive ---------------------------------------------------------------------------

def test_the_kept_config_is_reported_at_the_base_class_store():
    got = _scan()
    handed = got[("Kp29Method", "moe_quant_config")]
    kept = got[("Kp29ExpertsBase", "quant_config")]
    assert kept.line == _line("        self.quant_config = quant_config  # expect")
    assert (kept.category, kept.severity, kept.rule_round) == ("container", Severity.WARNING, 29)
    assert handed.severity is Severity.WARNING and handed.rule_round == 0
    # the reader: the subclass's kernel call through the accessor reading the kept attribute
    read = "return kp29_kernel(x, self.w1_scale)"
    assert kept.reader == f"kernel-call {kept.file}:{_line(read)} in Kp29Experts.apply: {read}"
    assert kept.function == "Kp29ExpertsBase.__init__" and kept.owner == "self"
    assert kept.reason.startswith("keeps `quant_config`, handed `self.moe_quant_config` by "
                                  "Kp29Method.process_weights_after_loading (")
    assert ("handed on through kp29_make_kernel(moe_quant_config=) -> "
            "experts_cls(quant_config=) as Kp29ExpertsBase") in kept.evidence
    assert kept.via[-1] == "Kp29ExpertsBase.__init__"
    assert kept.derives_from == handed.derives_from == "layer.w13_weight_scale"


def test_only_the_true_positive_and_the_rebuilt_stores_are_loud():
    assert _loud(_scan()) == {("Kp29ExpertsBase", "quant_config"),
                              ("Kp29Method", "moe_quant_config"),
                              ("Kp29OtherMethod", "other_config"),
                              ("Kp29InitMethod", "init_config"),
                              ("Kp29IntMethod", "int_config")}


def test_the_twins_keep_no_site():
    got = _scan()
    assert not _TWINS & set(got)
    assert not {k for k, f in got.items() if f.rule_round == 29} - {("Kp29ExpertsBase",
                                                                     "quant_config")}


# ---- canaries ------------------------------------------------------------------------------------

def test_canary_without_the_rule_the_kept_config_is_missed(monkeypatch):
    from derivgraph.audit.static import evidence as evidence_module
    monkeypatch.setattr(evidence_module, "kept_handoffs", lambda findings, *args: findings)
    assert ("Kp29ExpertsBase", "quant_config") not in _scan()


def test_canary_without_the_scalar_check_the_int_is_a_site(monkeypatch):
    monkeypatch.setattr(handoff_module, "_PLAIN", re.compile(r"(?!)"))
    assert _scan()[("Kp29IntExperts", "int_config")].severity is Severity.WARNING


def test_canary_a_value_rebuilt_after_load_makes_the_once_twin_a_site(tmp_path):
    got = _planted(tmp_path,
                   "        self.kernel = Kp29OnceExperts(once_config=self.fixed_config)\n",
                   "        self.fixed_config = Kp29QuantConfig(w1_scale=layer.w13_weight_scale "
                   "* 6.0, w2_scale=layer.w2_weight_scale * 6.0)\n"
                   "        self.kernel = Kp29OnceExperts(once_config=self.fixed_config)\n")
    assert got[("Kp29OnceExperts", "once_config")].rule_round == 29


def test_canary_keeping_the_rebuilt_parameter_makes_the_other_twin_a_site(tmp_path):
    got = _planted(tmp_path, "        self.name_config = name_config\n",
                   "        self.name_config = other_config\n")
    assert got[("Kp29OtherExperts", "name_config")].severity is Severity.WARNING


def test_canary_constructed_in_the_post_load_step_the_init_twin_is_a_site(tmp_path):
    got = _planted(tmp_path, "        self.init_config = self.get_fused_moe_quant_config(layer)"
                   "  # expect: container warning\n",
                   "        self.init_config = self.get_fused_moe_quant_config(layer)"
                   "  # expect: container warning\n"
                   "        self.kernel = Kp29InitExperts(init_config=self.init_config)\n")
    assert got[("Kp29InitExperts", "init_config")].severity is Severity.WARNING


def test_canary_a_handoff_anywhere_in_the_class_makes_the_init_twin_a_site(monkeypatch):
    # widened: the whole class's text instead of the storing step's
    from derivgraph.audit.static import evidence as evidence_module
    real = evidence_module.kept_handoffs

    def widened(findings, index, body):
        def whole(f):
            text = dict(index.files)[f.file]
            return evidence_module.function_text(text, f.cls)
        return real(findings, index, whole)

    monkeypatch.setattr(evidence_module, "kept_handoffs", widened)
    assert ("Kp29InitExperts", "init_config") in _scan()
