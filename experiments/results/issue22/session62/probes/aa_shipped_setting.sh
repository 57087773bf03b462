#!/usr/bin/env bash
# A/A on the shipped setting (session 62): four plain applications side by side, the
# throughput collector with the heap left to size itself (what LOCAL_DEFAULTS ships) against
# a fixed heap (what session 61's A/A measured). Summarised with
# ../../session61/probes/aa_spread.py. Run from a checkout with .venv and SF 1 data.
set -u
OUT=experiments/results/issue22/session62
run() {  # name, java options
  .venv/bin/criss replay --mode spark --replicas 4 --stream random --sf 1 --queries 30 --seed 6 \
    --quiet --conf spark.driver.memory=4g --conf "spark.driver.extraJavaOptions=$2" \
    --out $OUT/aa-$1.json > $OUT/aa-$1.out 2>&1
  pkill -f SparkSubmit; sleep 5
}
run parallel-sized "-XX:+UseParallelGC"
run parallel-fixed "-XX:+UseParallelGC -Xms4g"
