import json,sys
a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
ka={(x['file'],x['line'],x['attr'],x['category']):x for x in a}; kb={(x['file'],x['line'],x['attr'],x['category']):x for x in b}
print(len(a),len(b),'sites differ:',set(ka)^set(kb))
n=0
for k in ka:
  x,y=ka[k],kb.get(k)
  if y is None: continue
  ch=[f for f in ('severity','reader','derives_from','reader_kind','evidence') if x.get(f)!=y.get(f)]
  if ch:
    n+=1
    print(f"{k[0]}:{k[1]} {k[2]} [{x['severity']}->{y['severity']}] changed={ch}")
    for f in ('reader','derives_from'):
      if x.get(f)!=y.get(f): print('   OLD',f,x.get(f),'\n   NEW',f,y.get(f))
print('changed findings',n)
