#!/usr/bin/env bash
# One command: set up and run the whole test suite (real Spark, local mode).
# Extra arguments go to pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
cd "$ROOT"
exec "$VENV/bin/python" -m pytest "$@"
