#!/usr/bin/env bash
# The CPU of some test files with PostgreSQL's own counted: the test processes' (and their children's,
# from AGENTLOOP_TEST_TIMELINE) plus the PostgreSQL server's, which the timeline cannot see. The files
# run against a PostgreSQL of their own (scripts/start-postgres.sh on AGENTLOOP_BENCH_PG_PORT, default
# 54391), so the server's CPU (its postmaster, the backends it reaped and the live ones, from /proc)
# is theirs alone: the shared server of the tests serves everyone on the machine.
#   bench/test-cpu-pg.sh <label> <filter-substring>...   e.g. bench/test-cpu-pg.sh base mutation-in-process
# Prints one line: the test processes' CPU, their children's, PostgreSQL's, the wall time, the load,
# and, when that server loads pg_stat_statements (started with -c shared_preload_libraries=pg_stat_statements),
# the statements run and the polls of a partitioned DBOS queue among them. Keeps /tmp/test-cpu-pg-<label>.{json,log}.
# Linux only (/proc). Run it twice alternated with the variant you compare: the machine is shared.
set -euo pipefail
label=$1
shift
cd "$(dirname "$0")/.."
PORT="${AGENTLOOP_BENCH_PG_PORT:-54391}"
url=$(AGENTLOOP_PG_PORT="$PORT" bash scripts/start-postgres.sh)
pid_file="${AGENTLOOP_PG_DIR:-/tmp/agentloop-pg-$PORT}/data/postmaster.pid"
tck=$(getconf CLK_TCK)
# The server's CPU so far in seconds: the postmaster's own and its reaped children's, and its live children's.
pg_cpu() {
  local pm total
  pm=$(head -1 "$pid_file")
  total=$(awk '{print $14+$15+$16+$17}' "/proc/$pm/stat")
  for child in $(pgrep -P "$pm"); do
    total=$((total + $(awk '{print $14+$15}' "/proc/$child/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
statements() { psql -tAq "$url" -c "$1" 2>/dev/null || true; }
statements "SELECT pg_stat_statements_reset()" >/dev/null
before=$(pg_cpu)
load=$(cut -d' ' -f1 /proc/loadavg)
start=$(date +%s.%N)
status=0
AGENTLOOP_TEST_PG_URL="$url" AGENTLOOP_TEST_TIMELINE="/tmp/test-cpu-pg-$label.json" node scripts/run-tests.mjs "$@" >"/tmp/test-cpu-pg-$label.log" 2>&1 || status=$?
end=$(date +%s.%N)
after=$(pg_cpu)
calls=$(statements "SELECT sum(calls) FROM pg_stat_statements")
polls=$(statements "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE 'WITH RECURSIVE partitions%'")
node -e '
const [file, label, pgTicks, tck, wall, load, calls, polls, status] = process.argv.slice(1);
let own = 0, children = 0;
for (const p of require(file).processes) { own += p.cpu; children += p.children ?? 0; }
const pg = Number(pgTicks) / Number(tck);
const total = own / 1000 + children / 1000 + pg;
console.log(`${label} ${new Date().toISOString().slice(0, 16)}Z load ${load}: tests ${(own / 1000).toFixed(1)} s + children ${(children / 1000).toFixed(1)} s + PostgreSQL ${pg.toFixed(1)} s = ${total.toFixed(1)} s of CPU; wall ${Number(wall).toFixed(1)} s` +
  (calls ? `; ${calls} statements, ${polls} partitioned-queue polls` : "") + (status === "0" ? "" : `; the tests FAILED (status ${status})`));
' "/tmp/test-cpu-pg-$label.json" "$label" "$((after - before))" "$tck" "$(echo "$end - $start" | bc)" "$load" "$calls" "$polls" "$status"
exit "$status"
