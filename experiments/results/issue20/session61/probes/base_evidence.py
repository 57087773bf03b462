"""Whether the QTree held evidence for a shared base when it was cached (``base_share``).

For every operator cached as a ``shared_base`` in a replay's home: its reference count and
the count of the cached operator above it at that query, whether its template or the one
above had been seen under other literals before, and which later queries read it. Reads the
decisions each query recorded, through the home's query log (``criss.history``).

    python base_evidence.py HOME
"""

from __future__ import annotations

import json
import sqlite3
import sys

from criss.history import QueryHistory


def main(home: str) -> None:
    log = QueryHistory.read_only(f"{home}/catalog.db")
    queries = [
        (row["id"], row["at"], json.loads(row["decisions"]))
        for row in reversed(log.recent(limit=None))
    ]
    log.close()
    # the template key is the QTree's column, not one of its NodeStats
    db = sqlite3.connect(f"{home}/catalog.db")
    template = dict(db.execute("select fingerprint, template_key from nodes"))
    first_seen = dict(db.execute("select fingerprint, first_seen from nodes"))
    read_at: dict[str, list[int]] = {}
    for qid, _, record in queries:
        for op in record["operators"]:
            if op["decision"]["action"] == "reuse":
                read_at.setdefault(op["fingerprint"], []).append(qid)

    def others_before(fingerprint: str, at: float) -> int:
        key = template.get(fingerprint)
        return sum(
            1
            for fp, k in template.items()
            if k == key and fp != fingerprint and first_seen[fp] < at
        )

    for qid, at, record in queries:
        ops = {tuple(op["path"]): op for op in record["operators"]}
        for path, op in ops.items():
            if op["decision"]["reason"] != "shared_base":
                continue
            above = [
                ops[path[:k]]
                for k in range(len(path))
                if path[:k] in ops and ops[path[:k]]["decision"]["action"] == "cache"
            ][-1]
            later = [q for q in read_at.get(op["fingerprint"], []) if q > qid]
            print(
                f"query {qid}: base {op['op']} ref {op['stats']['ref']} "
                f"({op['stats']['size_bytes']} bytes) under {above['op']} ref "
                f"{above['stats']['ref']}; templates seen under other literals before: "
                f"base {others_before(op['fingerprint'], at)}, above "
                f"{others_before(above['fingerprint'], at)}; read later by queries {later}"
            )


if __name__ == "__main__":
    main(sys.argv[1])
