"""What the subtrees cached on first sight for a later statement of their template did in a
replay (session 66): for each statement that cached one, its template, plain Spark's and
Criss's seconds, and per subtree the estimates it was weighed on (Texec, size, the chance
its literal columns keep their values, reuses, gain), what it measured once written, and
how many later statements read it. Reads the replay's Criss home, named in the result file
(a temporary directory of the machine that ran it). From the repository root:

    .venv/bin/python -m experiments.results.issue20.session66.probes.shared_subtrees FILE
"""

import json
import sys

from experiments.results.issue20.session66.probes.cached_and_read import entry_reads, home_records


def main() -> None:
    result = json.load(open(sys.argv[1]))
    modes = result["modes"]
    entries = {e["key"]: e for e in result["criss_report"]["entries"]}
    records = home_records(result)
    reads = entry_reads(records)
    pairs = list(zip(modes["spark"]["queries"], modes["criss"]["queries"], strict=True))
    totals = [0.0, 0.0, 0, 0]
    for i, (p, c) in enumerate(pairs):
        shared = [o for o in records[i] if o["decision"]["reason"] == "eager_shared_subtree"]
        if not shared:
            continue
        totals[0] += p["seconds"]
        totals[1] += c["seconds"]
        print(
            f"{i:3d} {c['query']:4s} {c['variant']:5s} plain {p['seconds']:.2f} s, "
            f"Criss {c['seconds']:.2f} s"
        )
        for o in shared:
            n = o["decision"]["numbers"]
            entry = entries.get(o["fingerprint"], {})
            used = reads.get(o["fingerprint"], 0)
            totals[2] += 1
            totals[3] += bool(used)
            print(
                f"    {o['op']} {o['path']}: chance {n['unchanged_chance']:.2f}, reuses "
                f"{n['expected_reuses']:.2f}, Texec~{n['estimated_texec']:.2f} s, "
                f"size~{n['estimated_size'] / 1e6:.2f} MB, gain {n['expected_gain']:.2f} s; "
                f"measured Texec {entry.get('texec') or 0:.2f} s, "
                f"{(entry.get('bytes') or 0) / 1e6:.2f} MB; read by {used} later"
            )
    print(
        f"statements caching one: plain {totals[0]:.2f} s, Criss {totals[1]:.2f} s; "
        f"subtrees {totals[2]}, read later {totals[3]}"
    )


if __name__ == "__main__":
    main()
