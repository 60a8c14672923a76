"""Two recall classes: a library call's result kept through a local, then stored (``packed =
api.pack_weight(w)``; ``layer.x = packed``), is judged as the call stored directly would be
(``helper_local_cases.py``); a property returning another object's field is judged as that
field (``property_alias_cases.py``)."""

from __future__ import annotations

from pathlib import Path

from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity
from tests.audit.static.expectations import EVIDENCE_CORPUS as CORPUS
from tests.audit.static.expectations import planted_copy

NAME = "helper_local_cases.py"


def _findings(path: Path) -> dict[str, list]:
    got: dict[str, list] = {}
    for f in scan([path], specs=[], jobs=1).findings:
        got.setdefault(f.attr, []).append(f)
    return got


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_a_packed_weight_kept_through_a_local_is_an_error():
    got = _findings(CORPUS / NAME)
    (packed,) = got["packed_block_weight"]
    assert packed.severity is Severity.ERROR
    assert packed.line == _line_of(CORPUS / NAME, "layer.packed_block_weight = packed")
    assert "returned by pack_weight() from weight arguments" in packed.reason
    # the false positives of the class: a plan object, a call handed no weight
    assert "packed_block_plan" not in got and "packed_weight_desc" not in got


def test_the_local_rebound_to_a_kept_parameter_is_quiet(tmp_path):
    """Rebinding the local to the kept parameter before the store must drop the helper call:
    the rule follows the local's last binding, not any call it once held."""
    old = "        layer.packed_block_weight = packed"
    path = planted_copy(CORPUS / NAME, tmp_path, old, "        packed = layer.weight\n" + old)
    got = _findings(path)
    assert [f.severity for f in got.get("packed_block_weight", [])
            if f.severity is not Severity.INFO] == []


PROPS = "property_alias_cases.py"


def test_a_property_alias_of_a_config_tensor_is_a_reference_into_the_config():
    got = _findings(CORPUS / PROPS)
    (alias,) = got["_fc2_input_scale"]
    assert alias.severity is Severity.WARNING and alias.line == 22
    assert "`self.quant_config.a2_gscale`" in alias.reason
    assert "_block" not in got  # the false positive of the class: a property giving ints


def test_canary_a_property_of_self_only_stays_a_second_name(tmp_path):
    """Make the property return the object's own attribute: the store is then a second name
    for a tensor ``self`` holds, and quiet (the rule resolves only other objects' fields)."""
    old = "        return self.quant_config.a2_gscale\n"
    path = planted_copy(CORPUS / PROPS, tmp_path, old, "        return self._a2_gscale\n")
    got = _findings(path)
    assert [f for f in got.get("_fc2_input_scale", []) if f.severity is not Severity.INFO] == []
