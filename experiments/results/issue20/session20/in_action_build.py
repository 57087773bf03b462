"""What building Spark's cache of an intermediate adds to the user's action (drift streams).

For every position where Criss cached an operator under the query's result in the user's
action, reused nothing and lifted nothing, the Criss mode's time against the result-cache
mode's on the same statement (that mode caches the whole result only, in the same way),
beside the time writing the intermediate's bytes takes at the home's measured write
bandwidth. Reads each replay's Criss home (its decisions) as the run left it.

    python in_action_build.py drift-drift-sf1-100-seed{1,2,3}.json
"""

import json
import sqlite3
import sys
import zlib


def cached_intermediates(home: str) -> tuple[dict[int, list[dict]], float]:
    """Per query id, the operators under its result it chose to cache; the write bandwidth."""
    db = sqlite3.connect(home + "/catalog.db")
    meta = dict(db.execute("select key, value from meta"))
    chosen = {}
    for query_id, blob in db.execute("select id, decisions from queries"):
        decisions = json.loads(zlib.decompress(blob)) if blob else {}
        ops = [
            op
            for op in decisions.get("operators", [])
            if op["decision"]["action"] == "cache" and len(op["path"]) > 1
        ]
        if ops:
            chosen[query_id] = ops
    return chosen, float(meta.get("write_bandwidth") or 0)


added = writes = 0.0
for path in sys.argv[1:]:
    run = json.load(open(path))
    chosen, write_bandwidth = cached_intermediates(run["homes"]["criss"])
    modes = run["modes"]
    for plain, criss, results in zip(
        modes["spark"]["queries"],
        modes["criss"]["queries"],
        modes["criss-results"]["queries"],
        strict=True,
    ):
        counters = criss["criss"]
        ops = chosen.get(plain["position"] + 1)  # query ids count from 1
        if not ops or counters.get("operators_reused") or counters.get("aggregates_lifted"):
            continue
        size = sum(op["decision"]["numbers"].get("size_bytes") or 0 for op in ops)
        extra = criss["seconds"] - results["seconds"]
        write = size / write_bandwidth if write_bandwidth else 0.0
        if size:
            added, writes = added + extra, writes + write
        print(
            f"seed {run['seed']} position {plain['position']:3d} {plain['query']:>4} "
            f"{'+'.join(op['op'] for op in ops):<22} {size / 1e6:6.2f} MB  "
            f"added {extra:+.2f} s  writing {write:.2f} s"
        )
print(f"known sizes: added {added:.2f} s for {writes:.2f} s of writes: {added / writes:.2f}")
