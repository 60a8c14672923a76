import operator, time, statistics
from itertools import chain, repeat
MISSING = object()
_is = operator.is_
dicts = []
for i in range(10):
    dicts.append({f"attr_{j}_{i%3}": object() for j in range(40)})
for i in range(20):
    dicts.append({"weight": object(), "bias": object()} if i % 2 else {"weight": object()})
acc_d, acc_k, acc_v, per = [], [], [], []
for d in dicts:
    ks = list(d)[:30]
    per.append(ks)
    for k in ks:
        acc_d.append(d); acc_k.append(k); acc_v.append(d[k])
print(len(acc_d))
def A():
    now = list(map(dict.get, acc_d, acc_k, repeat(MISSING, len(acc_d))))
    flags = list(map(_is, now, acc_v))
    return flags.count(False)
getters = [operator.itemgetter(*(ks if len(ks) > 1 else ks * 2)) for ks in per]
exp = list(chain.from_iterable(g(d) for g, d in zip(getters, dicts)))
def B():
    try:
        now = list(chain.from_iterable(map(operator.call, getters, dicts)))
    except KeyError:
        return None
    flags = list(map(_is, now, exp))
    return flags.count(False)
def C():
    now = [g(d) for g, d in zip(getters, dicts)]
    return now == exp
for f in (A, B, A, B):
    ts = []
    for _ in range(2000):
        s = time.perf_counter_ns(); f(); ts.append(time.perf_counter_ns() - s)
    print(f.__name__, statistics.median(ts) / 1e3)
full = list(chain.from_iterable(map(dict.values, dicts)))
keys_exp = list(map(tuple, dicts))
def D():
    if list(map(tuple, dicts)) != keys_exp: return None
    now = list(chain.from_iterable(map(dict.values, dicts)))
    flags = list(map(_is, now, full))
    return flags.count(False)
def E():
    now = list(chain.from_iterable(map(dict.values, dicts)))
    flags = list(map(_is, now, full))
    return flags.count(False)
def F():
    now = list(map(dict.get, acc_d, acc_k))
    return now == acc_v
for f in (A, D, E, F, A, D, E, F):
    ts = []
    for _ in range(2000):
        s = time.perf_counter_ns(); f(); ts.append(time.perf_counter_ns() - s)
    print(f.__name__, statistics.median(ts) / 1e3)
