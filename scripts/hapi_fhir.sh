#!/usr/bin/env bash
# Build, start, wait for and stop groundeval's HAPI FHIR test server (servers/hapi-fhir: FHIR R4,
# H2 in memory, 127.0.0.1 only). Used by .ci/run; see docs/agents/fhir-server-hapi.md.
#
#   scripts/hapi_fhir.sh build   # mvn package once (artifacts cached in ~/.m2); skipped when the jar is newer than the sources
#   scripts/hapi_fhir.sh start   # start in the background; prints the base URL
#   scripts/hapi_fhir.sh wait    # until GET [base]/metadata answers (at most GROUNDEVAL_HAPI_WAIT seconds, default 300)
#   scripts/hapi_fhir.sh stop    # stop the server this script started
#
# Environment: GROUNDEVAL_HAPI_PORT (default 8090), GROUNDEVAL_HAPI_XMX (default 1g),
# JAVA_HOME (default: the java on PATH; Java 17 or newer).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT="${GROUNDEVAL_HAPI_PORT:-8090}"
SERVER_DIR="servers/hapi-fhir"
JAR="$SERVER_DIR/target/groundeval-hapi-fhir.jar"
STATE="${TMPDIR:-/tmp}/groundeval-hapi-$PORT"
PIDFILE="$STATE/pid"
LOG="$STATE/server.log"
BASE="http://127.0.0.1:$PORT/fhir"
JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"

build() {
  if [ -f "$JAR" ] && [ -z "$(find "$SERVER_DIR/pom.xml" "$SERVER_DIR/src" -newer "$JAR" -print -quit)" ]; then
    echo "HAPI FHIR server jar is up to date: $JAR"
    return
  fi
  local start=$SECONDS
  (cd "$SERVER_DIR" && mvn -B -q package -DskipTests)
  echo "built $JAR in $((SECONDS - start)) s"
}

start() {
  [ -f "$JAR" ] || { echo "no $JAR: run '$0 build' first" >&2; exit 1; }
  if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    echo "HAPI FHIR already running (pid $(cat "$PIDFILE")) at $BASE"
    return
  fi
  mkdir -p "$STATE"
  GROUNDEVAL_HAPI_PORT="$PORT" nohup "$JAVA" "-Xmx${GROUNDEVAL_HAPI_XMX:-1g}" -XX:+UseSerialGC \
    -jar "$JAR" >"$LOG" 2>&1 &
  echo $! >"$PIDFILE"
  echo "HAPI FHIR starting (pid $!, log $LOG) at $BASE"
}

wait_ready() {
  local limit="${GROUNDEVAL_HAPI_WAIT:-300}" start=$SECONDS
  while (( SECONDS - start < limit )); do
    if curl -sf -m 5 "$BASE/metadata" -o /dev/null; then
      local rss
      rss=$(awk '/VmRSS/ {print int($2/1024)}' "/proc/$(cat "$PIDFILE")/status" 2>/dev/null || echo "?")
      echo "HAPI FHIR ready at $BASE after $((SECONDS - start)) s (RSS ${rss} MiB)"
      return
    fi
    if [ -f "$PIDFILE" ] && ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      echo "HAPI FHIR exited while starting; last lines of $LOG:" >&2
      tail -40 "$LOG" >&2
      exit 1
    fi
    sleep 1
  done
  echo "HAPI FHIR did not answer $BASE/metadata within $limit s; see $LOG" >&2
  exit 1
}

stop() {
  if [ -f "$PIDFILE" ]; then
    local pid
    pid=$(cat "$PIDFILE")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
      echo "HAPI FHIR stopped (pid $pid)"
    fi
    rm -f "$PIDFILE"
  fi
}

case "${1:-}" in
  build) build ;;
  start) start ;;
  wait) wait_ready ;;
  stop) stop ;;
  url) echo "$BASE" ;;
  *) echo "usage: $0 build|start|wait|stop|url" >&2; exit 2 ;;
esac
