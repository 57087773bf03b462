#!/usr/bin/env bash
# One command: set up, generate TPC-H data, replay a short Zipf stream through plain Spark
# and Criss side by side, print per-query times and totals, then the commands that look
# inside the cache it kept (results/demo-home). Extra arguments go to `criss replay`
# (e.g. --sf 1 --queries 100 --stream random-v, or --home DIR). With --cluster first, the
# replay runs on a standalone cluster (a master and two workers) started on 127.0.0.1 for
# it and stopped after; --master spark://HOST:PORT runs it on a cluster of your own.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
mkdir -p results
say "replaying 20 TPC-H queries (SF 0.1) through plain Spark and Criss; Criss home: results/demo-home"
if [ "${1:-}" = "--cluster" ]; then
  shift
  say "starting a Spark standalone cluster on 127.0.0.1 (logs in results/demo-cluster) ..."
  MASTER="$("$VENV/bin/criss" cluster start --dir results/demo-cluster)"
  trap '"$VENV/bin/criss" cluster stop --dir results/demo-cluster >/dev/null' EXIT
  set -- --master "$MASTER" --conf spark.executor.memory=2g "$@"
fi
# not exec'd: the trap above stops the cluster when the replay ends
"$VENV/bin/criss" replay --stream zipf --queries 20 --sf 0.1 --mode both \
  --home results/demo-home --out results/demo.json "$@"
