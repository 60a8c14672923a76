"""Young-collection cost per object kind, in isolation: N objects made right after a full
collection, then gc.collect(0) timed (process time, median of 5)."""
import gc
import statistics
import time

import torch

N = 100000


class Slotted:  # a RowEntry-like object: 8 slots
    __slots__ = ("a", "b", "c", "d", "e", "f", "g", "h")

    def __init__(self, t):
        self.a, self.b, self.c, self.d = t, "x", 0, None
        self.e, self.f, self.g, self.h = t, 1, False, None


MAKE = {
    "UntypedStorage": lambda base: list(map(torch.Tensor.untyped_storage, base)),
    "Tensor(detach)": lambda base: list(map(torch.Tensor.detach, base)),
    "slotted(8)": lambda base: list(map(Slotted, base)),
    "tuple(str..8)": lambda base: [tuple(str(i) + c for c in "abcdefgh") for i in range(N)],
}


def run(kind):
    out = []
    for _ in range(5):
        base = [torch.empty(4) for _ in range(N)]
        gc.collect()
        gc.disable()
        objs = MAKE[kind](base)
        t = time.process_time()
        gc.collect(0)
        out.append(time.process_time() - t)
        del objs, base
        gc.enable()
        gc.collect()
    return statistics.median(out)


for kind in MAKE:
    s = run(kind)
    print(f"{kind:16s} gc0 {s * 1e3:7.2f} ms per {N}  ({s / N * 1e9:.0f} ns each)", flush=True)
