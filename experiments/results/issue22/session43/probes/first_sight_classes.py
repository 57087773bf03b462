"""Which classes Spark's code generation compiles for Criss's first sight of a statement
that plain Spark has just run, identical: what Criss's plan alone compiles, and in how
many milliseconds (issue 22: Zipf-QS replays' Criss applications compile 31-54 more
classes over their first occurrences than the plain ones).

Per TPC-H template, in one application: plain Spark runs the statement twice (its
classes compiled and cached), then Criss runs it in a new home with Spark's
``CodeGenerator`` logging at DEBUG (every class compiled, its source and its time) between
two markers on stderr. ``--parse LOG`` reads that stderr back into one line per template.

    .venv/bin/python PROBE [--conf KEY=VALUE] 2> LOG; .venv/bin/python PROBE --parse LOG
"""

import argparse
import re
import sys
import tempfile
from collections import Counter

#: Where a class's source starts, and the line Spark logs after compiling it.
_CLASS = re.compile(r"\*/ (?:public |final )*(?:abstract )?class (\w+)")
_COMPILED = re.compile(r"Code generated in ([\d.]+) ms")


def run(confs: list[str]) -> None:
    import criss
    from criss.bridge import compiled_classes, log_compile_times
    from criss.sparksession import local_spark
    from criss.workload.tpch.data import register_views
    from criss.workload.tpch.queries import QUERY_IDS, statement

    spark = local_spark(app_name="first-sight-classes")
    for conf in confs:
        spark.conf.set(*conf.split("=", 1))
    register_views(spark, "data/tpch/sf1")
    for template in QUERY_IDS:
        sql = statement(template, seed=500 + template).sql
        spark.sql(sql).collect()
        spark.sql(sql).collect()
        cs = criss.session(spark, home=tempfile.mkdtemp(prefix="first-sight-classes-"))
        log_compile_times(spark, "DEBUG")
        print(f"=== Q{template} BEGIN", file=sys.stderr, flush=True)
        before = compiled_classes(spark)
        cs.sql(sql).collect()
        count = compiled_classes(spark) - before
        print(f"=== Q{template} END {count}", file=sys.stderr, flush=True)
        log_compile_times(spark, "WARN")
        cs.settle_harvests()
        cs.close()
    spark.stop()


def parse(path: str) -> None:
    compiled: dict[str, list[tuple[str, float]]] = {}
    template, kind = None, None
    for line in open(path, errors="replace"):
        marker = re.match(r"=== (Q\d+) (BEGIN|END)", line)
        if marker:
            template = marker[1] if marker[2] == "BEGIN" else None
            compiled.setdefault(marker[1], [])
            kind = None
            continue
        if template is None:
            continue
        found = _CLASS.search(line)
        if found and kind is None:
            kind = found[1]
        done = _COMPILED.search(line)
        if done:
            compiled[template].append((kind or "?", float(done[1])))
            kind = None
    kinds, total = Counter(), 0.0
    for template, classes in compiled.items():
        ms = sum(t for _, t in classes)
        total += ms
        kinds.update(k for k, _ in classes)
        listed = ", ".join(f"{k} {t:.0f}" for k, t in classes)
        print(f"{template}: {len(classes)} classes, {ms:.0f} ms ({listed})")
    count = sum(kinds.values())
    print(f"all: {count} classes, {total:.0f} ms; by kind: {dict(kinds.most_common())}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parse", metavar="LOG")
    parser.add_argument("--conf", action="append", default=[])
    args = parser.parse_args()
    if args.parse:
        parse(args.parse)
    else:
        run(args.conf)
