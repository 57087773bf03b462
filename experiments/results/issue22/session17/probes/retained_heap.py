"""What the driver's heap keeps after first sights: 22 TPC-H statements through plain Spark,
then 22 through Criss (fresh literals each, its background work settled), in one local
application; after each, the JVM's live objects by class (``jcmd GC.class_histogram``, after
full collections that let Spark's ContextCleaner free what became unreachable) and the Spark
JVM objects Python holds.

    python retained_heap.py DATA_DIR OUT.json
"""

import gc
import json
import subprocess
import sys
import tempfile
import time

import criss
from criss.bridge import collect_jvm_garbage, jvm_objects_held_by_python, jvm_process_id
from criss.sparksession import local_spark
from criss.workload.benchmarks import parquet_data
from criss.workload.streams import no_repeat_stream


def live_objects(spark, top: int = 5) -> dict:
    gc.collect()  # Python's references to JVM objects first, then two collections in the JVM:
    for _ in range(2):  # Spark's ContextCleaner frees unreachable broadcasts' blocks in between
        collect_jvm_garbage(spark)
        time.sleep(1.0)
    pid = str(jvm_process_id(spark))
    text = subprocess.run(
        ["jcmd", pid, "GC.class_histogram"], capture_output=True, text=True, check=True
    ).stdout
    rows = [line.split() for line in text.splitlines()]
    classes = [(r[3], int(r[2])) for r in rows if len(r) >= 4 and r[0][:-1].isdigit()]
    total = next(int(r[2]) for r in rows if r and r[0] == "Total")
    held = jvm_objects_held_by_python()
    return {
        "live_mb": round(total / 2**20, 1),
        "largest_classes_mb": {name: round(size / 2**20, 1) for name, size in classes[:top]},
        "jvm_objects_held_by_python": dict(held.most_common(8)),
    }


def main() -> None:
    data, out = sys.argv[1], sys.argv[2]
    spark = local_spark("retained-heap")
    parquet_data("tpch").register_views(spark, data)
    statements = [item.sql for item in no_repeat_stream(22 * 2, 13, 1.0)]
    found = {"start": live_objects(spark)}
    for sql in statements[:22]:
        spark.sql(sql).collect()
    found["after 22 plain"] = live_objects(spark)
    cs = criss.session(spark, home=tempfile.mkdtemp())
    for sql in statements[22:]:
        cs.sql(sql).collect()
        cs.settle_harvests()
    found["after 22 through Criss"] = live_objects(spark)
    cs.close()
    with open(out, "w") as f:
        json.dump(found, f, indent=1)
    print(json.dumps(found, indent=1))
    spark.stop()


if __name__ == "__main__":
    main()
