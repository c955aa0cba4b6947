#!/usr/bin/env bash
# Prints the server binaries of the test matrix and their versions, as the
# test harness resolves them (testkit/src/server.rs: Flavor::binary).
set -euo pipefail
CACHE=${RSBLOOM_SERVER_CACHE:-/var/cache/rsbloom-servers}
# The newest build of package $1 on version line $2 (8.0, 8.6, 9).
newest() { ls -d "$CACHE/$1"-"$2".*/bin/"$1"-server 2>/dev/null | sort -V | tail -n 1; }
for entry in \
  "redis7:${RSBLOOM_REDIS7_SERVER:-redis-server}" \
  "redis8:${RSBLOOM_REDIS8_SERVER:-$(newest redis 8.0)}" \
  "redis86:${RSBLOOM_REDIS86_SERVER:-$(newest redis 8.6)}" \
  "valkey8:${RSBLOOM_VALKEY8_SERVER:-valkey-server}" \
  "valkey9:${RSBLOOM_VALKEY9_SERVER:-$(newest valkey 9)}"; do
  name=${entry%%:*} bin=${entry#*:}
  if [ -n "$bin" ] && command -v "$bin" >/dev/null; then
    echo "server $name: $bin: $("$bin" --version)"
  else
    echo "server $name: missing (scripts/ensure-deps.sh test builds it)"
  fi
done
