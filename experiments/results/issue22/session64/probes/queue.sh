#!/usr/bin/env bash
# Session 64's runs, one after the other on an idle machine, from a clone with TPC-H SF 1
# and SF 0.05 data (each file name ends with the commit it ran on).
set -u
rev=$(git rev-parse --short HEAD)
run() {  # name, args...
  local name=$1; shift
  .venv/bin/criss replay --quiet --out "$name-$rev.json" "$@"
  pkill -f SparkSubmit; sleep 5
}
# on 9f5bca6 (the owed runs)
run drift-hot-sf0.05-40-seed202 --stream drift-hot --sf 0.05 --queries 40 --seed 202
run random-v-sf0.05-40-seed303 --stream random-v --sf 0.05 --queries 40 --seed 303
run random-v-sf1-100-seed2 --stream random-v --sf 1 --queries 100 --seed 2
run drift-sf1-100-seed1 --stream drift --sf 1 --queries 100 --seed 1
# killed for memory ten minutes in (four 6 GB fixed heaps); refused up front since 997afb0
# run random-sf1-60-seed11-replicas2 --stream random --sf 1 --queries 60 --seed 11 --replicas 2
.venv/bin/python -m experiments.results.issue22.session64.probes.small_first_sights drift-hot 0.05 40 202
# on e9edb2d (the widening's estimate)
run random-v-sf1-100-seed2 --stream random-v --sf 1 --queries 100 --seed 2
run random-v-sf1-100-seed1 --stream random-v --sf 1 --queries 100 --seed 1
run drift-sf1-100-seed3 --stream drift --sf 1 --queries 100 --seed 3
# on d4d4693, after the README test
run random-sf1-60-seed11-replicas2-4g --stream random --sf 1 --queries 60 --seed 11 --replicas 2 \
  --conf spark.driver.memory=4g
run zipf-sf1-60-seed6-replicas2-4g --stream zipf --sf 1 --queries 60 --seed 6 --replicas 2 \
  --conf spark.driver.memory=4g
