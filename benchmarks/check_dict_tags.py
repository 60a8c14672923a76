import ctypes, sys
from collections import OrderedDict, defaultdict
def tag(d): return ctypes.c_int64.from_address(id(d)+24).value
class P: pass
def store(o, v): o.attr = v
class M:
    def __setattr__(self, k, v): object.__setattr__(self, k, v)
plain={"a":object()}; od=OrderedDict(a=object()); p=P(); p.attr=object(); inst=p.__dict__
m=M(); m.x=1; md=m.__dict__; dd=defaultdict(list)
steps=[(plain,lambda: plain.__setitem__("a",object())),(plain,lambda: plain.__setitem__("b",1)),(plain,lambda: plain.__delitem__("b")),
(plain,lambda: plain.update(c=2)),(plain,lambda: plain.pop("c")),(plain,lambda: plain.setdefault("d",3)),(plain,plain.clear),
(od,lambda: od.__setitem__("a",object())),(od,lambda: od.pop("a")),(md,lambda: setattr(m,"x",object())),(dd,lambda: dd["z"])]
steps += [(inst, lambda: store(p, object())) for _ in range(40)]
ok=[]
for d,f in steps:
    t=tag(d); f(); ok.append(tag(d)!=t)
# also: attribute set before dict materialized, then dict materialized
q=P(); q.attr=1; qd=q.__dict__
for _ in range(40):
    t=tag(qd); store(q, object()); ok.append(tag(qd)!=t)
print(sys.version.split()[0], all(ok), ok.count(False))
