"""construction_sites of the tree given as argv[1] on the scan's own (texts, names) (construction_args.py),
in process and forked; pickles the in-process answer to argv[2] (compare two trees' pickles as dicts)."""
import time, pickle, resource, sys
sys.path.insert(0, sys.argv[1])
import derivgraph.audit.static.construction as C
print(C.__file__)
texts, names = pickle.load(open("/tmp/s43_constr_args.pkl", "rb"))
res = {}
for jobs in (1, 2, 1, 2):
    ch = resource.getrusage(resource.RUSAGE_CHILDREN); c = time.process_time(); w = time.perf_counter()
    res[jobs] = C.construction_sites(texts, names, jobs)
    ch2 = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(jobs, "parent cpu", round(time.process_time() - c, 3), "wall", round(time.perf_counter() - w, 3), "children", round(ch2.ru_utime + ch2.ru_stime - ch.ru_utime - ch.ru_stime, 3))
pickle.dump(res[1], open(sys.argv[2], "wb"))
