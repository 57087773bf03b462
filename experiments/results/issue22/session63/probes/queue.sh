#!/usr/bin/env bash
# Serial queue (one CPU-heavy job at a time): waits for the running drift replay.
while pgrep -f "criss replay" > /dev/null; do sleep 10; done
pkill -f SparkSubmit; sleep 5
echo "$(date +%T) end drift-sf1-100-seed3 (3a460d1)" >> /tmp/s63/queue.log
cd /tmp/bench && git fetch -q /work/main main && git merge -q --ff-only FETCH_HEAD
rev=$(git rev-parse --short HEAD)
echo "$(date +%T) tests on $rev" >> /tmp/s63/queue.log
.venv/bin/python -m pytest -q -m "not spark" -p no:cacheprovider > /tmp/s63/nonspark-tests.out 2>&1
echo "$(date +%T) non-spark tests rc=$?" >> /tmp/s63/queue.log
.venv/bin/python -m pytest -q tests/test_parameter_recurrence.py tests/test_policies.py tests/test_subsume_rules.py tests/test_subsumption.py > /tmp/s63/lift-tests.out 2>&1
rc=$?
echo "$(date +%T) lift tests rc=$rc" >> /tmp/s63/queue.log
pkill -f SparkSubmit; sleep 5
run() {  # name, args...
  local name=$1; shift
  [ -f /tmp/s63/stop ] && return
  echo "$(date +%T) start $name" >> /tmp/s63/queue.log
  .venv/bin/criss replay --quiet --out /tmp/s63/$name-$rev.json "$@" > /tmp/s63/$name.log 2>&1
  local rc=$?
  echo "$(date +%T) end $name rc=$rc" >> /tmp/s63/queue.log
  pkill -f SparkSubmit; sleep 5
}
run random-v-sf1-100-seed3 --stream random-v --sf 1 --queries 100 --seed 3
run drift-sf1-100-seed3 --stream drift --sf 1 --queries 100 --seed 3
run zipf-sf1-60-seed11 --stream zipf --sf 1 --queries 60 --seed 11
run no-repeat-sf0.05-40-seed505 --stream no-repeat --sf 0.05 --queries 40 --seed 505
run random-sf1-60-seed11 --stream random --sf 1 --queries 60 --seed 11
# after the README test and Random-QS-v seed 1 (readme_test_then_random_v1.sh), on 2a3e525:
run random-sf1-60-seed7 --stream random --sf 1 --queries 60 --seed 7
run zipf-sf1-60-seed6 --stream zipf --sf 1 --queries 60 --seed 6
echo "$(date +%T) queue done" >> /tmp/s63/queue.log
touch /tmp/s63/queue.done
