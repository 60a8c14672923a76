import torch, time, statistics
torch.set_num_threads(1)
a = [torch.empty(64, 64) for _ in range(7)]; b = [torch.randn(64, 64) for _ in range(7)]
c = [torch.empty(64, 32) for _ in range(4)] + [torch.empty(()) for _ in range(6)]
d = [torch.randn(32, 64).t() for _ in range(2)] + [torch.randn(64, 32) for _ in range(2)] + [torch.randn(()) for _ in range(6)]
ac, bd = a + c, b + d
def two(): torch._foreach_copy_(a, b); torch._foreach_copy_(c, d)
def one(): torch._foreach_copy_(ac, bd)
def one_cat(): torch._foreach_copy_(a + c, b + d)
for f in (two, one, one_cat, two, one, one_cat):
    ts = []
    for _ in range(3000):
        s = time.thread_time_ns(); f(); ts.append(time.thread_time_ns() - s)
    print(f.__name__, statistics.median(ts) / 1e3)
