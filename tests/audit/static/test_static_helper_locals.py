"""A library call's result kept through a local, then stored (``packed = api.pack_weight(w)``;
``layer.x = packed``), is judged as the call stored directly would be (``helper_local_cases.py``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from derivgraph.audit.static.scan import scan
from derivgraph.audit.static.semantics import Severity

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "static_corpus_evidence"
NAME = "helper_local_cases.py"


def _findings(path: Path) -> dict[str, list]:
    got: dict[str, list] = {}
    for f in scan([path], specs=[], jobs=1).findings:
        got.setdefault(f.attr, []).append(f)
    return got


def test_a_packed_weight_kept_through_a_local_is_an_error():
    got = _findings(CORPUS / NAME)
    (packed,) = got["packed_block_weight"]
    assert packed.severity is Severity.ERROR and packed.line == 15
    assert "returned by pack_weight() from weight arguments" in packed.reason
    # the false positives of the class: a plan object, a call handed no weight
    assert "packed_block_plan" not in got and "packed_weight_desc" not in got


def test_the_local_rebound_to_a_kept_parameter_is_quiet(tmp_path):
    """Rebinding the local to the kept parameter before the store must drop the helper call:
    the rule follows the local's last binding, not any call it once held."""
    path = tmp_path / NAME
    shutil.copy(CORPUS / NAME, path)
    text = path.read_text()
    old = "        layer.packed_block_weight = packed"
    assert text.count(old) == 1
    path.write_text(text.replace(old, "        packed = layer.weight\n" + old))
    got = _findings(path)
    assert [f.severity for f in got.get("packed_block_weight", [])
            if f.severity is not Severity.INFO] == []
