import json,sys
a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
k=lambda f:(f['file'],f['line'],f['attr'],f['category'])
A={k(f):f for f in a}; B={k(f):f for f in b}
print(len(A),len(B), 'keys equal', A.keys()==B.keys())
n=0
for key in A:
    x,y=A[key],B.get(key)
    if y is None: continue
    other=[f for f in x if f not in ('reader','reader_kind','evidence') and x[f]!=y[f]]
    if other: print('NONEVIDENCE', key, other)
    if x['reader']!=y['reader']:
        n+=1
        print(x['severity'][0], key[0].replace('vllm/model_executor/layers/',''), key[1], key[2]);print('   old', (x['reader'] or '')[:140]); print('   new', (y['reader'] or '')[:140])
print('changed', n)
