"""The per-write floor of a Python-level write log (lever 1), hot (a lower bound: vLLM's reload
runs it cold): a pass-through wrapper around nn.Module.register_parameter, and the same plus
the two PEP 509 tag reads (before and after the write) a log needs to vouch that no unlogged
write hit the dict. Thread CPU clock, 20 runs of 151 calls each (the writes one reload of the
tiny Llama makes through the module API), medians. usage: python3 write_log_floor.py [JSON]"""
import ctypes, json, os, statistics, sys, time
import torch
from torch import nn

torch.set_num_threads(1)
mods = [nn.Linear(4, 4) for _ in range(151)]
params = [nn.Parameter(torch.zeros(1)) for _ in mods]
orig = nn.Module.register_parameter


def wrapped(self, name, p):
    return orig(self, name, p)


def logged(self, name, p, _log=[], _at=ctypes.c_int64.from_address):
    d = self._parameters
    before = _at(id(d) + 24).value
    orig(self, name, p)
    _log.append((d, name, before, _at(id(d) + 24).value))


def run(fn):
    out = []
    for _ in range(20):
        s = time.thread_time_ns()
        for m, p in zip(mods, params):
            fn(m, "extra", p)
        out.append((time.thread_time_ns() - s) / 1e3)
        for m in mods:
            del m._parameters["extra"]
    return statistics.median(out)


res = {name: run(fn) for name, fn in (("plain", orig), ("pass_through", wrapped),
                                       ("logged_with_tags", logged))}
res.update(per_call_pass_through_us=(res["pass_through"] - res["plain"]) / 151,
           per_call_logged_us=(res["logged_with_tags"] - res["plain"]) / 151,
           load_after=os.getloadavg())
print(json.dumps(res, indent=1))
if len(sys.argv) > 1:
    open(sys.argv[1], "w").write(json.dumps(res, indent=1) + "\n")
