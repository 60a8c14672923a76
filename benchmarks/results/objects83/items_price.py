"""The price of young list items for gc.collect(0), in isolation: old objects (strs, ints,
tensors; collected into an old generation first), then young lists referring to them, N
items in all; gc(0)'s time per item. Compare: 75k young tensors + 75k young storages alone."""
import gc, random, time
import torch
old_s = [f"layers.{i}.weight" for i in range(200000)]
old_i = [random.getrandbits(40) for _ in range(200000)]
old_t = [torch.empty(2) for _ in range(100000)]
gc.collect(); gc.disable()
for label, pool in (("str", old_s), ("int", old_i), ("Tensor", old_t)):
    for total in (1_000_000, 6_000_000):
        lists = [pool[:100000] for _ in range(total // 100000)]
        t = time.perf_counter(); gc.collect(0); t = time.perf_counter() - t
        print(f"{total:9d} young list items of old {label:6s}: gc(0) {t*1e3:6.1f} ms "
              f"({t/total*1e9:.1f} ns/item)")
        del lists; gc.collect()
ts = [torch.empty(2) for _ in range(75000)]; ss = list(map(torch.Tensor.untyped_storage, ts))
del ss
t = time.perf_counter(); gc.collect(0); t = time.perf_counter() - t
print(f"75k young tensors + 75k young storages (+1 list): gc(0) {t*1e3:.1f} ms")
