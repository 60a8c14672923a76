import resource, time, sys
import derivgraph.audit.static.scan as S
def cpu(who):
    r = resource.getrusage(who); return r.ru_utime, r.ru_stime, r.ru_minflt
jobs = int(sys.argv[1])
a, b = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
S.scan(package="vllm", jobs=jobs)
a2, b2 = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
print(f"jobs={jobs} parent user={a2[0]-a[0]:.2f} sys={a2[1]-a[1]:.2f} flt={a2[2]-a[2]}  children user={b2[0]-b[0]:.2f} sys={b2[1]-b[1]:.2f} flt={b2[2]-b[2]}")
