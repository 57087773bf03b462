"""Which earlier work a replay's first sights that reused nothing had in common with
earlier statements (session 65): for each, its highest operators that an earlier statement
had computed (matched in the QTree) with a measured Texec above 0.3 s, the largest of
them, and what Criss decided for it then. Reads the replay's Criss home, named in the
result file (a temporary directory of the machine that ran it). From the repository root:

    .venv/bin/python -m experiments.results.issue20.session65.probes.missed_reuse FILE
"""

import ast
import json
import sqlite3
import sys
import zlib


def decisions(blob) -> dict:
    raw = blob if isinstance(blob, bytes) else ast.literal_eval(blob)
    return json.loads(zlib.decompress(raw))


def main() -> None:
    result = json.load(open(sys.argv[1]))
    modes = result["modes"]
    catalog = sqlite3.connect(result["homes"]["criss"] + "/catalog.db")
    rows = catalog.execute("select decisions from queries order by cast(id as int)").fetchall()
    seen: set[str] = set()
    total = 0.0
    pairs = zip(modes["spark"]["queries"], modes["criss"]["queries"], strict=True)
    for i, (p, c) in enumerate(pairs):
        if c["statement"] in seen:
            continue
        seen.add(c["statement"])
        if c.get("criss", {}).get("operators_reused"):
            continue
        operators = decisions(rows[i][0])["operators"]
        matched = [o for o in operators if o["matched"] and (o["stats"] or {}).get("texec") or 0]
        matched = [o for o in matched if o["stats"]["texec"] > 0.3]
        paths = [tuple(o["path"]) for o in matched]
        highest = [
            o
            for o in matched
            if not any(tuple(o["path"])[: len(q)] == q and tuple(o["path"]) != q for q in paths)
        ]
        if not highest:
            continue
        best = max(highest, key=lambda o: o["stats"]["texec"])
        stats, decision = best["stats"], best["decision"]
        total += stats["texec"]
        print(
            f"{i:3d} {p['query']:4s} {p['variant']:5s} plain {p['seconds']:.2f} s: "
            f"{best['op']} at {best['path']}, ref {stats['ref']}, Texec {stats['texec']:.2f} s, "
            f"{stats['rows']} rows, {stats['size_bytes']} B -> {decision['action']} "
            f"({decision['reason']})"
        )
    print(f"sum of those Texecs: {total:.2f} s")


if __name__ == "__main__":
    main()
