import json, sys, statistics as st
for f in sys.argv[1:]:
    d = json.load(open(f))
    plain = {q['position']: q['seconds'] for q in d['modes']['spark']['queries']}
    rows = {'cache_only': [], 'nothing': []}
    for q in d['modes']['criss']['queries']:
        c = q.get('criss') or {}
        cached = c.get('operators_cached') or 0
        reused = c.get('operators_reused') or 0
        p = plain[q['position']]
        if q['position'] < 5: continue
        if cached and not reused: rows['cache_only'].append((q['seconds'] - p, p, q['query'], q['position'], c.get('entries_written_on_driver')))
        if not cached and not reused: rows['nothing'].append((q['seconds'] - p, p))
    for k, v in rows.items():
        if v:
            print(f.split('/')[-1][:40], k, len(v), 'sum diff %.2f' % sum(x[0] for x in v), 'median diff %.3f' % st.median(x[0] for x in v), 'sum plain %.1f' % sum(x[1] for x in v))
    for x in sorted(rows['cache_only']): print('   ', x)
