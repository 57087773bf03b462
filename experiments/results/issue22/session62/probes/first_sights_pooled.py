"""First occurrences in replays (session 62), Criss's seconds against plain Spark's at the
same positions. Default: the first occurrences where Criss reused, rolled up and subsumed
nothing, per replay file, per template over all files, then all together. With
``--by-work``: every first occurrence of each file, grouped by whether Criss reused
anything there, else by how many operators it cached and whether it lifted an aggregate or
measured join keys after the action. Session 37's ``first_occurrences_pooled`` pools every
first occurrence, reuse included, with an interval. From the repository root:

    python -m experiments.results.issue22.session62.probes.first_sights_pooled \
        [--by-work] RESULTS.json [RESULTS.json ...]
"""

import collections
import json
import statistics
import sys

from experiments.summary import first_positions, statement_keys

REUSE = ("operators_reused", "rewrites_filter_subsumption", "rewrites_aggregate_rollup")


def first_occurrences(path):
    """(plain record, Criss record, Criss's counters) at each statement's first position."""
    data = json.load(open(path))
    plain, criss = data["modes"]["spark"]["queries"], data["modes"]["criss"]["queries"]
    for position in first_positions(statement_keys(data)):
        yield plain[position], criss[position], criss[position].get("criss") or {}


def reused(counters):
    """Whether Criss served anything of the statement from its cache."""
    return any(counters.get(k) for k in REUSE)


def work_done(counters):
    if reused(counters):
        return "reused"
    key = f"cached {counters.get('operators_cached') or 0}"
    key += " +lift" if counters.get("aggregates_lifted") else ""
    return key + (" +keys" if counters.get("join_key_measurements_after_action") else "")


def by_work(paths):
    for path in paths:
        groups = collections.defaultdict(lambda: [0, 0.0, 0.0])
        for s, c, counters in first_occurrences(path):
            group = groups[work_done(counters)]
            group[0] += 1
            group[1] += s["seconds"]
            group[2] += c["seconds"]
        print(path.rsplit("/", 1)[-1])
        for key, (n, p, c) in sorted(groups.items()):
            print(
                f"   {key:18} n={n:3} plain {p:6.1f} s Criss {c:6.1f} s x{c / p:.3f} "
                f"({c - p:+.2f} s)"
            )


def pooled(paths):
    by_template = collections.defaultdict(list)
    for path in paths:
        pairs = []
        for s, c, counters in first_occurrences(path):
            if not reused(counters):
                pairs.append((s["seconds"], c["seconds"]))
                by_template[s["query"]].append(pairs[-1])
        p, c = sum(a for a, _ in pairs), sum(b for _, b in pairs)
        print(
            f"{path.rsplit('/', 1)[-1]:48} {len(pairs):3} first sights, plain {p:6.1f} s, "
            f"Criss {c:6.1f} s, x{c / p:.3f}"
        )
    total = [0.0, 0.0, 0]
    for q, v in sorted(by_template.items(), key=lambda kv: int(kv[0][1:])):
        p, c = sum(a for a, _ in v), sum(b for _, b in v)
        total[0] += p
        total[1] += c
        total[2] += len(v)
        median = statistics.median(b - a for a, b in v)
        print(
            f"{q:4} n={len(v):2} plain {p:6.2f} Criss {c:6.2f} x{c / p:.3f} "
            f"median excess {median:+.3f} s"
        )
    print(
        f"all {total[2]} first sights: plain {total[0]:.1f} s, Criss {total[1]:.1f} s, "
        f"x{total[1] / total[0]:.3f}"
    )


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--by-work":
        by_work(args[1:])
    else:
        pooled(args)
