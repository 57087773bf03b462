#!/usr/bin/env bash
# Set-up shared by the README's two commands: Java 17+, a virtualenv, the package.
# Safe to run again: it only does what is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${CRISS_VENV:-$ROOT/.venv}"
EXTRAS="${CRISS_EXTRAS:-test}"

say() { printf '\033[1m[criss setup]\033[0m %s\n' "$*" >&2; }

java_major() {
  local java="java"
  [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && java="$JAVA_HOME/bin/java"
  command -v "$java" >/dev/null 2>&1 || { echo 0; return; }
  "$java" -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}

ensure_java() {
  local major
  major="$(java_major)"
  if [ "${major:-0}" -ge 17 ] 2>/dev/null; then return; fi
  say "Java 17+ not found (found: ${major:-none}); Spark 4 needs it."
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    say "installing a headless JDK with apt-get ..."
    apt-get update -qq
    for pkg in openjdk-17-jre-headless openjdk-21-jre-headless default-jre-headless; do
      if apt-get install -y -qq "$pkg" >/dev/null 2>&1; then break; fi
    done
  fi
  major="$(java_major)"
  if ! [ "${major:-0}" -ge 17 ] 2>/dev/null; then
    say "ERROR: could not install Java 17+. Install it yourself (Debian/Ubuntu:"
    say "  sudo apt-get install openjdk-17-jre-headless) or set JAVA_HOME, then run again."
    exit 1
  fi
}

# pip with only its errors shown: its output goes to a log that is printed when it fails.
quiet_pip() {
  local log status=0
  log="$(mktemp "${TMPDIR:-/tmp}/criss-pip.XXXXXX")"
  "$VENV/bin/python" -m pip --disable-pip-version-check --no-input -q "$@" >"$log" 2>&1 \
    || status=$?
  if [ "$status" -ne 0 ]; then
    say "ERROR: pip $* failed; its output:"
    grep -v '^\s*$' "$log" >&2 || true
  fi
  rm -f "$log"
  return "$status"
}

ensure_python() {
  local py="${PYTHON:-python3}"
  if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
    say "ERROR: Python 3.10+ is needed ($py is $("$py" --version 2>&1))."; exit 1
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    say "creating virtual environment $VENV"
    "$py" -m venv "$VENV" || {
      say "ERROR: python3 -m venv failed; on Debian/Ubuntu install python3-venv."; exit 1; }
  fi
  local stamp="$VENV/.criss-installed"
  if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
    say "installing criss[$EXTRAS] into $VENV (first time takes a minute: pyspark is large)"
    quiet_pip install --upgrade pip
    quiet_pip install -e "$ROOT[$EXTRAS]"
    touch "$stamp"
  fi
}

ensure_java
ensure_python
