"""``share_stage_code`` on and off side by side in one application, timed: two SparkSessions
(``newSession``: their own settings, one JVM), each wrapped by Criss in a home of its own.
Every TPC-H template is run three times under new values; each statement runs twice through
plain Spark in that session first (its code compiled), then through Criss; the two sessions
alternate which goes first. Later sights only are summed (first sights compile alike).

    .venv/bin/python experiments/results/issue22/session59/probes/stage_code_times.py 0.05
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import criss
from criss.bridge import compiled_classes
from criss.sparksession import local_spark
from criss.workload.tpch.data import register_views
from criss.workload.tpch.queries import statement


def main() -> None:
    spark = local_spark(app_name="stage-code-times")
    sessions = {}
    for share in ("true", "false"):
        session = spark.newSession()
        register_views(session, Path("data/tpch/sf" + sys.argv[1]))
        home = tempfile.mkdtemp(prefix=f"stage-code-{share}-")
        sessions[share] = (session, criss.session(session, home=home, share_stage_code=share))
    totals = {share: [0.0, 0] for share in sessions}
    turn = 0
    for sight in range(3):
        for template in range(1, 23):
            sql = statement(template, seed=7000 + 100 * sight + template).sql
            order = ("true", "false") if turn % 2 == 0 else ("false", "true")
            turn += 1
            shown = []
            for share in order:
                session, cs = sessions[share]
                session.sql(sql).collect()
                session.sql(sql).collect()
                before, started = compiled_classes(session), time.perf_counter()
                cs.sql(sql).collect()
                seconds = time.perf_counter() - started
                compiled = compiled_classes(session) - before
                cs.settle_harvests()
                if sight:
                    totals[share][0] += seconds
                    totals[share][1] += compiled
                shown.append(f"{share}: {seconds:.3f} s {compiled} classes")
            print(f"sight {sight + 1} Q{template}: " + "; ".join(shown), flush=True)
    for share, (seconds, compiled) in totals.items():
        print(f"later sights, share_stage_code={share}: {seconds:.2f} s, {compiled} classes")
    for _, cs in sessions.values():
        cs.close()


if __name__ == "__main__":
    main()
