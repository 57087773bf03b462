#!/usr/bin/env bash
# One command: set up, generate TPC-H data, replay a short Zipf stream through plain Spark
# and Criss side by side, print per-query times and totals, then the commands that look
# inside the cache it kept (results/demo-home). Extra arguments go to `criss replay`
# (e.g. --sf 1 --queries 100 --stream random-v, or --home DIR).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
mkdir -p results
say "replaying 20 TPC-H queries (SF 0.1) through plain Spark and Criss; Criss home: results/demo-home"
exec "$VENV/bin/criss" replay --stream zipf --queries 20 --sf 0.1 --mode both \
  --home results/demo-home --out results/demo.json "$@"
