"""A tuple-unpacked store is reported on its own target's line (recall v7: CT W4A8-FP8
``b_strides1``/``b_strides2`` sat 7 and 8 lines below the statement the finding named)."""

from __future__ import annotations

import textwrap

from derivgraph.audit.static.scan import scan

CASE = textwrap.dedent('''\
    import torch


    def convert(w):
        return w * 2, torch.ones(4), torch.zeros(2)


    class Method:
        def process_weights_after_loading(self, layer):
            (
                layer.w,
                self.strides_a,
                self.strides_b,
            ) = convert(layer.weight)
            self.one, self.two = convert(layer.weight)[:2]

        def apply(self, layer, x):
            return torch.ops.kern(x, layer.w, self.strides_a, self.strides_b, self.one, self.two)
    ''')


def test_each_unpacked_target_is_reported_on_its_own_line(tmp_path):
    path = tmp_path / "unpack_case.py"
    path.write_text(CASE)
    found = {(f.attr, f.line, f.col) for f in scan([path], specs=[], jobs=1).findings}
    lines = CASE.splitlines()
    assert {a for a, _, _ in found} >= {"w", "strides_a", "strides_b"}
    for attr, line, col in found:
        # the reported line and column are where the stored attribute is written
        assert lines[line - 1][col:].split("=")[0].split(",")[0].strip().endswith("." + attr), \
            (attr, line, col)
    assert {(a, ln) for a, ln, _ in found if a.startswith("strides")} == {
        ("strides_a", 12), ("strides_b", 13)}
