#!/usr/bin/env bash
# One command: set up and run the whole test suite: every test on real Spark in local mode,
# then the tests marked `cluster` again on a standalone cluster (a master and two workers)
# started on 127.0.0.1 for the run. Extra arguments go to pytest, for the local pass only.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"

# The dashboard tests open every page in headless Chromium (Debian's package).
ensure_chromium() {
  if command -v chromium >/dev/null 2>&1; then return; fi
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "installing Chromium for the dashboard's browser tests with apt-get ..."
    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
        >/dev/null 2>&1; then return; fi
  fi
  say "Chromium is not installed: the dashboard's browser tests will be skipped"
  say "  (Debian/Ubuntu: apt-get install chromium)."
}
ensure_chromium

cd "$ROOT"
if [ $# -gt 0 ]; then exec "$VENV/bin/python" -m pytest "$@"; fi
# The local pass runs on one pytest worker per core (at most 4; pytest-xdist), each with a
# Spark application of its own; a test file stays on one worker, in order (some files'
# last test looks across the file's earlier ones). CRISS_TEST_WORKERS=1 runs it in one process.
if [ -n "${CRISS_TEST_WORKERS:-}" ]; then
  workers="$CRISS_TEST_WORKERS"
else
  workers="$(nproc 2>/dev/null || echo 1)"
  workers=$((workers > 4 ? 4 : workers))
fi
parallel=()
[ "$workers" -gt 1 ] && parallel=(-n "$workers" --dist loadfile)
# tests that start applications of their own run once, on the cluster (marker cluster_pass)
"$VENV/bin/python" -m pytest -m "not cluster_pass" "${parallel[@]}" --durations=30
say "the cluster tests, on a loopback standalone cluster ..."
exec "$VENV/bin/python" -m pytest -m "cluster and not local_only" --spark-master loopback --durations=15
