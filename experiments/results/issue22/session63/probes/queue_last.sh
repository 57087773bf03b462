#!/usr/bin/env bash
cd /tmp/bench
rev=$(git rev-parse --short HEAD)
run() {
  local name=$1; shift
  [ -f /tmp/s63/stop ] && return
  echo "$(date +%T) start $name" >> /tmp/s63/queue.log
  .venv/bin/criss replay --quiet --out /tmp/s63/$name-$rev.json "$@" > /tmp/s63/$name.log 2>&1
  local rc=$?
  echo "$(date +%T) end $name rc=$rc" >> /tmp/s63/queue.log
  pkill -f SparkSubmit; sleep 5
}
run random-sf1-60-seed7 --stream random --sf 1 --queries 60 --seed 7
run zipf-sf1-60-seed6 --stream zipf --sf 1 --queries 60 --seed 6
echo "$(date +%T) queue5 done" >> /tmp/s63/queue.log
