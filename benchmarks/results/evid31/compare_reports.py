import json,sys
a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
key=lambda f:(f['file'],f['line'],f['attr'],f['cls'],f['function'])
A={key(f):f for f in a}; B={key(f):f for f in b}
print(len(A),len(B), 'site diff:', set(A)^set(B))
n=0
for k in A:
    if k in B:
        for fld in ('severity','declared','category'):
            if A[k][fld]!=B[k][fld]: print('DIFF',fld,k)
        if A[k].get('reader')!=B[k].get('reader'):
            n+=1
            print(k[0],k[1],k[2]); print('  old',A[k].get('reader')); print('  new',B[k].get('reader'))
print('changed readers', n)
