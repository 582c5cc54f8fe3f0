#!/usr/bin/env bash
# Installs (if needed) and starts a throwaway PostgreSQL server on 127.0.0.1 for the tests.
# Prints the connection URL on stdout. Idempotent: a server already running on the port is reused.
set -euo pipefail
PORT="${AGENTLOOP_PG_PORT:-54329}"
DIR="${AGENTLOOP_PG_DIR:-/tmp/agentloop-pg}"
if ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) >&2
  else
    echo "PostgreSQL is not installed and this user cannot apt-get install it" >&2
    exit 1
  fi
fi
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
URL="postgres://postgres@127.0.0.1:${PORT}/postgres"
if "$BIN/pg_isready" -h 127.0.0.1 -p "$PORT" -q 2>/dev/null; then
  echo "$URL"
  exit 0
fi
RUN_AS=()
if [ "$(id -u)" = 0 ]; then RUN_AS=(runuser -u postgres --); fi
mkdir -p "$DIR"
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
if [ ! -f "$DIR/data/PG_VERSION" ]; then
  "${RUN_AS[@]}" "$BIN/initdb" -D "$DIR/data" -A trust -U postgres >/dev/null
fi
"${RUN_AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w \
  -o "-p $PORT -h 127.0.0.1 -k $DIR -c max_connections=200 -c fsync=off" start >/dev/null
echo "$URL"
