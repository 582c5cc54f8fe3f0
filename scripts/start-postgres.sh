#!/usr/bin/env bash
# Installs (if needed) and starts a throwaway PostgreSQL server on 127.0.0.1 for the tests.
# Prints the connection URL on stdout. Idempotent: a server already running on the port is reused.
# Safe to call from several processes at once (parallel test files, several clones): the check and
# the start happen under a lock per port, and each port has its own data directory.
#   AGENTLOOP_PG_PORT  the port (default 54329)
#   AGENTLOOP_PG_DIR   the server's directory (default /tmp/agentloop-pg-$PORT)
set -euo pipefail
PORT="${AGENTLOOP_PG_PORT:-54329}"
DIR="${AGENTLOOP_PG_DIR:-/tmp/agentloop-pg-$PORT}"
URL="postgres://postgres@127.0.0.1:${PORT}/postgres"

# Holds an exclusive lock on $1 on file descriptor 9 (released when this script exits).
lock() {
  exec 9>>"$1"
  if ! flock -w 300 9; then
    echo "start-postgres.sh: waited 300 s for the lock $1" >&2
    exit 1
  fi
}

if ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "PostgreSQL is not installed and this user cannot apt-get install it" >&2
    exit 1
  fi
  lock /tmp/agentloop-pg-install.lock
  if ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) >&2
  fi
fi
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)

ready() { "$BIN/pg_isready" -h 127.0.0.1 -p "$PORT" -q 2>/dev/null; }

if ready; then
  echo "$URL"
  exit 0
fi

# One caller at a time checks and starts the server of this port; the others wait, then find it ready.
lock "/tmp/agentloop-pg-$PORT.lock"
if ready; then
  echo "$URL"
  exit 0
fi
RUN_AS=()
if [ "$(id -u)" = 0 ]; then RUN_AS=(runuser -u postgres --); fi
mkdir -p "$DIR"
if [ "$(id -u)" = 0 ]; then chown postgres "$DIR"; fi
if [ ! -f "$DIR/data/PG_VERSION" ]; then
  rm -rf "$DIR/data" # a half-made directory from an interrupted initdb
  "${RUN_AS[@]}" "$BIN/initdb" -D "$DIR/data" -A trust -U postgres --no-sync >/dev/null 9>&-
fi
# The server must not inherit the lock (9>&-): it would hold it for as long as it runs.
# Under the lock nobody else is starting this directory's server: a postmaster.pid left here belongs
# to a server that is gone (or is still shutting down); pg_ctl removes a stale one itself.
if ! "${RUN_AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 120 \
  -o "-p $PORT -h 127.0.0.1 -k $DIR -c max_connections=200 -c fsync=off" start >/dev/null 9>&-; then
  echo "start-postgres.sh: the server on port $PORT did not start; its log ($DIR/server.log) ends with:" >&2
  tail -5 "$DIR/server.log" >&2 || true
  exit 1
fi
echo "$URL"
