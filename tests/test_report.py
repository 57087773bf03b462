"""``cs.report()`` as a Report: the same dict for programs, a short summary when printed."""

from __future__ import annotations

import json

from criss.report import Report


def _tier(used: int, capacity: int | None, partitions: int, hits: int, misses: int) -> dict:
    return {
        "used_bytes": used,
        "capacity_bytes": capacity,
        "bandwidth": 5e7,
        "partitions": partitions,
        "writable": True,
        "hits": hits,
        "misses": misses,
        "bytes_read": 0,
        "bytes_written": used,
        "promotions": 0,
        "demotions": 0,
        "evictions": 0,
    }


#: Shaped like ``CrissSession.report()`` in criss/engine.py.
REPORT = {
    "counters": {
        "queries": 12,
        "operators_seen": 140,
        "operators_matched": 60,
        "operators_reused": 9,
        "operators_cached": 7,
        "partitions_reused": 30,
        "partitions_recomputed": 2,
        "bytes_written": 4096,
        "bytes_read": 8192,
        "fallbacks": 1,
        "invalidated": 0,
    },
    "tiers": {
        "memory": _tier(3 << 20, 2 << 30, 20, 25, 1),
        "disk": _tier(512, None, 4, 5, 1),
    },
    "entries": [
        {
            "key": "ab" * 32,
            "op": "Aggregate",
            "num_partitions": 4,
            "reusable": [0, 1, 3],
            "bitmap": "MM.D",
            "bytes": 2048,
            "rows": 10,
            "texec": 1.5,
            "created": 1.0,
        },
        {
            "key": "cd" * 32,
            "op": "Join",
            "num_partitions": 2,
            "reusable": [0, 1],
            "bitmap": "MM",
            "bytes": 100,
            "rows": 3,
            "texec": 0.4,
            "created": 2.0,
        },
    ],
    "faults": {"crc": 0},
    "partitions_refused": 0,
    "qtree_operators": 140,
    "harvest_seconds": 0.25,
    "policy": "criss",
    "media": "hybrid",
    "granularity": "partition",
    "home": "/data/criss",
}


def test_the_dict_content_is_unchanged_for_programs():
    report = Report(REPORT)
    assert isinstance(report, dict) and report == REPORT
    assert json.loads(json.dumps(report)) == REPORT
    assert report["tiers"]["memory"]["hits"] == 25


def test_printing_a_report_gives_a_short_readable_summary():
    text = str(Report(REPORT))
    lines = text.splitlines()
    assert (
        lines[0]
        == "Criss report for /data/criss (policy criss, media hybrid, granularity partition)"
    )
    assert "12 (1 fell back to plain Spark)" in lines[1]
    assert "9 reused, 7 cached, 140 seen" in text
    assert "30 reused (hits), 2 recomputed (misses)" in text
    assert "memory tier" in text and "3.0 MiB of 2.0 GiB, 20 partitions, 25 hits, 1 misses" in text
    assert "disk tier" in text and "512 B (no quota), 4 partitions, 5 hits" in text
    assert "2 (5/6 partitions reusable)" in text
    assert "time saved" not in text  # this report does not carry it
    assert len(lines) <= 10 and "{" not in text  # a summary, not the dict


def test_time_saved_is_shown_when_the_report_has_it():
    text = str(Report({**REPORT, "time_saved_seconds": 12.345}))
    assert "time saved         12.35 s" in text


def test_an_empty_report_still_prints():
    assert "queries            0" in str(Report({}))
