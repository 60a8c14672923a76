"""Left 1's estimate: the 100k pass's fp32 work (25k ``inv = 1/scale``, 25k
``prod = scale*weight``, [8] each) as the flat path's whole-buffer ops (``index_select`` / op /
``index_copy_`` over the memory spans of ``derivgraph.compiler.flat``), unchunked and in chunks
of ``flat.MAX_ELEMENTS``, against the foreach form the pass takes at 100k (its groups are over
``MAX_ELEMENTS``); each 9 times, the three alternating twice; every tensor checked exact.

    PATH=/work/venv/bin:$PATH PYTHONPATH=. python3 benchmarks/results/floor69/flat_chunks.py
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

from derivgraph.compiler import flat

LAYERS = 25000


def _index(span: flat.Span, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """Each element's position in ``span.view`` (contiguous [8] fp32 tensors)."""
    starts = (np.fromiter(map(torch.Tensor.data_ptr, tensors), np.int64) - span.low) // 4
    return torch.from_numpy((starts[:, None] + np.arange(8)).reshape(-1))


def _timed(fn: Callable[[], None]) -> str:
    samples = []
    for _ in range(9):
        gc.collect()
        gc.disable()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
        gc.enable()
    return f"median {statistics.median(samples) * 1e3:.1f} ms, min {min(samples) * 1e3:.1f} ms"


def main() -> None:
    scale = [torch.rand(8) + 0.5 for _ in range(LAYERS)]
    weight = [torch.rand(8) for _ in range(LAYERS)]
    inv = [torch.empty(8) for _ in range(LAYERS)]
    prod = [torch.empty(8) for _ in range(LAYERS)]
    src, out = flat.span_of(scale + weight), flat.span_of(inv + prod)
    assert src is not None and out is not None
    i_s, i_w = _index(src, scale), _index(src, weight)
    o_inv, o_prod = _index(out, inv), _index(out, prod)
    n = i_s.numel()
    buf_a, buf_b = torch.empty(n), torch.empty(n)

    def whole(step: int) -> None:
        for a in range(0, n, step):
            at = slice(a, a + step)
            x, y = buf_a[at], buf_b[at]
            torch.index_select(src.view, 0, i_s[at], out=x)
            torch.reciprocal(x, out=x)
            out.view.index_copy_(0, o_inv[at], x)
            torch.index_select(src.view, 0, i_s[at], out=x)
            torch.index_select(src.view, 0, i_w[at], out=y)
            torch.mul(x, y, out=x)
            out.view.index_copy_(0, o_prod[at], x)

    def foreach() -> None:
        torch._foreach_copy_(inv, scale)
        torch._foreach_reciprocal_(inv)
        torch._foreach_copy_(prod, scale)
        torch._foreach_mul_(prod, weight)

    with torch.no_grad():
        for _ in range(2):
            print("foreach (the 100k pass)", _timed(foreach))
            print("whole, unchunked", _timed(lambda: whole(n)))
            print(f"whole, chunks of {flat.MAX_ELEMENTS}",
                  _timed(lambda: whole(flat.MAX_ELEMENTS)))
        for t in inv + prod:
            t.zero_()
        whole(flat.MAX_ELEMENTS)
    assert all(torch.equal(a, 1.0 / b) for a, b in zip(inv, scale))
    assert all(torch.equal(p, a * b) for p, a, b in zip(prod, scale, weight))
    print("exact: every tensor checked after the chunked run")


if __name__ == "__main__":
    main()
