import json, statistics, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    plain = {q["position"]: q for q in d["modes"]["spark"]["queries"]}
    rows = {"cache_only": [], "nothing": []}
    for q in d["modes"]["criss"]["queries"]:
        c = q.get("criss") or {}
        if q["position"] < 5: continue
        cached, reused = c.get("operators_cached") or 0, c.get("operators_reused") or 0
        kind = "cache_only" if cached and not reused else "nothing" if not cached and not reused else None
        if kind is None: continue
        p = plain[q["position"]]
        rows[kind].append(dict(extra=q["seconds"]-p["seconds"], plan=c.get("planning_seconds",0), prep=c.get("phase_seconds",{}).get("prepare",0),
            bg=q.get("background_seconds",0), wait=q.get("idle_wait",0), pwait=p.get("idle_wait",0), gc=q.get("jvm_gc_seconds",0)-p.get("jvm_gc_seconds",0),
            comp=(q.get("classes_compiled") or 0)-(p.get("classes_compiled") or 0), bytes=c.get("bytes_written",0), q=q["query"], ondriver=c.get("entries_written_on_driver",0), inact=c.get("partitions_cached_in_action",0)))
    for k, rs in rows.items():
        med = lambda f: statistics.median(r[f] for r in rs)
        print(path.split('/')[-1][:30], k, len(rs), {f: round(med(f),3) for f in ("extra","plan","prep","bg","wait","pwait","gc","comp","bytes")})
    for r in sorted(rows["cache_only"], key=lambda r: r["q"]):
        print("   ", {k:(round(v,3) if isinstance(v,float) else v) for k,v in r.items()})
