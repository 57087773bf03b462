"""How many of what a replay cached were ever read (session 66): for each reason an
operator was cached for (a first-seen result, a measured operator's largest benefit, a
parameter-free aggregate, ...), how many entries it made and how many of them a later
statement read. Reads the replay's Criss home, named in the result file (a temporary
directory of the machine that ran it). From the repository root:

    .venv/bin/python -m experiments.results.issue20.session66.probes.cached_and_read FILE...
"""

import json
import sqlite3
import sys

from experiments.results.issue20.session65.probes.missed_reuse import decisions


def home_records(result: dict) -> list[list[dict]]:
    """Each query's operator records, in order, from the replay's Criss home."""
    catalog = sqlite3.connect(result["homes"]["criss"] + "/catalog.db")
    rows = catalog.execute("select decisions from queries order by cast(id as int)")
    return [decisions(row[0])["operators"] for row in rows]


def entry_reads(records: list[list[dict]]) -> dict[str, int]:
    """How many operators read each entry, by its key."""
    reads: dict[str, int] = {}
    for operators in records:
        for o in operators:
            if o.get("entry"):
                reads[o["entry"]] = reads.get(o["entry"], 0) + 1
    return reads


def main() -> None:
    for name in sys.argv[1:]:
        records = home_records(json.load(open(name)))
        reads = entry_reads(records)
        kinds: dict[str, list[int]] = {}
        for operators in records:
            for o in operators:
                if o["decision"]["action"] == "cache":
                    counts = kinds.setdefault(o["decision"]["reason"], [0, 0])
                    counts[0] += 1
                    counts[1] += bool(reads.get(o["fingerprint"]))
        print(name.rsplit("/", 1)[-1])
        for reason, (cached, read) in sorted(kinds.items()):
            print(f"  {reason:24s} cached {cached:3d}, read later {read:3d}")


if __name__ == "__main__":
    main()
