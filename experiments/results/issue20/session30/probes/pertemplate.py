"""Per template: plain vs Criss seconds, count, cached/reused positions."""
import json, sys, collections
d = json.load(open(sys.argv[1]))
plain = {q['position']: q for q in d['modes']['spark']['queries']}
crs = {q['position']: q for q in d['modes']['criss']['queries']}
agg = collections.defaultdict(lambda: [0, 0.0, 0.0, []])
for p, q in crs.items():
    a = agg[q['query']]
    a[0] += 1; a[1] += plain[p]['seconds']; a[2] += q['seconds']
    c = q.get('criss') or {}
    tag = ''
    if c.get('operators_cached') or c.get('operators_cached_in_action'): tag += 'C'
    if c.get('operators_reused'): tag += 'R'
    if c.get('fallback'): tag += 'F'
    a[3].append(f"{p}:{plain[p]['seconds']:.2f}/{q['seconds']:.2f}{tag}")
tot = sum(v[1]-v[2] for v in agg.values())
print(f"plain {sum(v[1] for v in agg.values()):.1f} criss {sum(v[2] for v in agg.values()):.1f}")
for k, v in sorted(agg.items(), key=lambda kv: kv[1][2]-kv[1][1], reverse=True):
    print(f"{k:4} n={v[0]:2} plain {v[1]:6.2f} criss {v[2]:6.2f} diff {v[2]-v[1]:+6.2f} ratio {v[2]/v[1]:.2f}  " + ' '.join(v[3][:8]))
