#!/usr/bin/env bash
# Zipf-QS seed 7 (the worst first-occurrence run on the shipped setting) with the driver's
# heap fixed at its 6 GB (session 62). Run from a checkout with .venv and SF 1 data.
set -u
.venv/bin/criss replay --quiet --stream zipf --sf 1 --queries 60 --seed 7 \
  --conf "spark.driver.extraJavaOptions=-XX:+UseParallelGC -Xms6g" \
  --out experiments/results/issue22/session62/zipf-sf1-60-seed7-fixed-heap-$(git rev-parse --short HEAD).json
