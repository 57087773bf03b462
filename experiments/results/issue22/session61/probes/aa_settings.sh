#!/usr/bin/env bash
# A/A: four plain Spark applications side by side on one seeded stream, per JVM setting.
set -u
cd /tmp/bench
run() {  # name, java options
  .venv/bin/criss replay --mode spark --replicas 4 --stream random --sf 1 --queries 30 --seed 6 \
    --quiet --conf spark.driver.memory=4g --conf "spark.driver.extraJavaOptions=$2" \
    --out experiments/results/issue22/session61/aa-$1.json > experiments/results/issue22/session61/aa-$1.out 2>&1
  pkill -f SparkSubmit; sleep 5
}
run g1 "-XX:+UseG1GC"
run g1-fixed "-XX:+UseG1GC -Xms4g"
run parallel-fixed "-XX:+UseParallelGC -Xms4g"
echo done > experiments/results/issue22/session61/done
