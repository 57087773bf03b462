#!/usr/bin/env bash
# After queue3: the README's two commands on a fresh clone of main, memory sampled; then one more replay.
while [ ! -f /tmp/s63/queue.done ]; do sleep 10; done
rm -rf /tmp/fresh63b && git clone -q /work/main /tmp/fresh63b && cd /tmp/fresh63b
echo "$(date +%T) README test on $(git rev-parse --short HEAD)" >> /tmp/s63/queue.log
( while [ ! -f /tmp/fresh63b.rc ]; do echo "$(date +%T) $(free -m | awk '/Mem:/{print $3, $7}')" >> /tmp/s63/mem-b.log; sleep 10; done ) &
start=$(date +%s)
bash scripts/setup.sh > /tmp/fresh63b-setup.out 2>&1 && bash scripts/test.sh > /tmp/fresh63b.out 2>&1
echo $? $(( $(date +%s) - start )) > /tmp/fresh63b.rc
echo "$(date +%T) README test rc=$(cat /tmp/fresh63b.rc)" >> /tmp/s63/queue.log
sleep 12
cd /tmp/bench
rev=$(git rev-parse --short HEAD)
[ -f /tmp/s63/stop ] && exit 0
echo "$(date +%T) start random-v-sf1-100-seed1" >> /tmp/s63/queue.log
.venv/bin/criss replay --quiet --out /tmp/s63/random-v-sf1-100-seed1-$rev.json --stream random-v --sf 1 --queries 100 --seed 1 > /tmp/s63/random-v-seed1.log 2>&1
echo "$(date +%T) end random-v-sf1-100-seed1 rc=$?" >> /tmp/s63/queue.log
