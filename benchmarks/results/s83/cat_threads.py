import torch, time, sys
print(torch.__version__, torch.get_num_threads(), torch.__config__.parallel_info().splitlines()[:6])
ts = [torch.randn(4) for _ in range(25000)]
big = [torch.randn(64) for _ in range(25000)]
for nt in (1, 2, 16):
    torch.set_num_threads(nt)
    for name, l in (("4", ts), ("64", big)):
        best = 1e9
        for _ in range(5):
            t = time.perf_counter(); torch.cat(l); best = min(best, time.perf_counter() - t)
        print(nt, name, f"{best*1e3:.2f} ms")
