#!/usr/bin/env bash
# Docker for `make docker` and the container test (tests/shared/container.rs).
#
#   scripts/docker.sh host           print the DOCKER_HOST to use, starting
#                                    rsbloom's own dockerd when none answers
#   scripts/docker.sh build [redis|valkey] [IMAGE]
#                                    build the image (default rsbloom:redis)
#                                    from the Dockerfile, the built module and
#                                    the newest server of the test matrix
#                                    (Redis 8.6.x, Valkey 9.x)
#   scripts/docker.sh stop           stop rsbloom's own dockerd, clean up
#
# A daemon that already answers (DOCKER_HOST, or the default socket) is used
# as it is. Otherwise, as root, Debian's docker.io is installed and a dockerd
# is started in the background with its own data, exec root and socket (there
# is no systemd to start it); it stays up for the next run (`stop` ends it).
# The base image `debian:bookworm-slim` is taken from the daemon, else pulled,
# else (no registry reachable) made locally with debootstrap from the
# machine's Debian mirror.
set -euo pipefail
cd "$(dirname "$0")/.."

RUN=/run/rsbloom-docker
DATA=/var/lib/rsbloom-docker
SOCK=unix://$RUN/docker.sock
PIDFILE=$RUN/dockerd.pid
LOG=/var/log/rsbloom-dockerd.log
BASE=${RSBLOOM_DOCKER_BASE:-debian:bookworm-slim}

log() { echo "docker.sh: $*" >&2; }
die() { log "$*"; exit 1; }

answers() { DOCKER_HOST=$1 timeout 10 docker info >/dev/null 2>&1; }

need_root() {
  [ "$(id -u)" = 0 ] || die "no Docker daemon answers; run as root to start one: scripts/docker.sh host"
}

install() {
  local missing=() cmd
  for cmd in "$@"; do
    case $cmd in
      dockerd) command -v dockerd >/dev/null || missing+=(docker.io) ;;
      debootstrap) command -v debootstrap >/dev/null || missing+=(debootstrap) ;;
    esac
  done
  [ ${#missing[@]} -eq 0 ] && return
  need_root
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Deletes the rules of iptables table $1 that match the extended regex $2.
drop_rules() {
  local rule
  { iptables -t "$1" -S 2>/dev/null || true; } | { grep -E -- "^-A .*($2)" || true; } | sed 's/^-A/-D/' \
    | while read -r rule; do eval iptables -t "$1" "$rule" 2>/dev/null || true; done
}

# What a killed dockerd leaves behind: the bridge, its iptables chains, the
# network namespace and overlay mounts under its roots.
cleanup() {
  local m chain
  for m in $(awk -v run="$RUN" -v data="$DATA" '$2 ~ "^(" run "|" data ")/" {print $2}' /proc/mounts | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  ip link delete docker0 2>/dev/null || true
  drop_rules filter '-j DOCKER[-A-Z0-9]*( |$)|docker0'
  drop_rules nat '-j DOCKER( |$)|docker0'
  for chain in DOCKER DOCKER-ISOLATION-STAGE-1 DOCKER-ISOLATION-STAGE-2 DOCKER-USER; do
    iptables -t filter -F "$chain" 2>/dev/null || true
    iptables -t filter -X "$chain" 2>/dev/null || true
  done
  iptables -t nat -F DOCKER 2>/dev/null || true
  iptables -t nat -X DOCKER 2>/dev/null || true
  if [ -f "$RUN/host-state" ]; then # what dockerd changed when it started
    read -r forward policy <"$RUN/host-state"
    sysctl -qw net.ipv4.ip_forward="$forward" || true
    iptables -P FORWARD "$policy" || true
    rm -f "$RUN/host-state"
  fi
  rm -f "$PIDFILE" "$RUN/docker.sock"
}

start_daemon() {
  need_root
  install dockerd
  mkdir -p "$RUN" "$DATA"
  exec 9>"$RUN.lock"
  flock 9 # one start at a time
  answers "$SOCK" && return
  if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    log "dockerd $(cat "$PIDFILE") does not answer on $SOCK: stopping it"
    stop_daemon
  fi
  cleanup
  echo "$(sysctl -n net.ipv4.ip_forward) $(iptables -S FORWARD | awk '$1 == "-P" {print $3}')" >"$RUN/host-state"
  log "starting dockerd (log $LOG)"
  setsid dockerd --data-root "$DATA" --exec-root "$RUN" --pidfile "$PIDFILE" -H "$SOCK" \
    </dev/null >>"$LOG" 2>&1 9>&- &
  local deadline=$((SECONDS + 60))
  until answers "$SOCK"; do
    if [ $SECONDS -ge $deadline ] || ! kill -0 $! 2>/dev/null; then
      tail -n 20 "$LOG" >&2
      die "dockerd did not answer on $SOCK within 60 s"
    fi
    sleep 0.5
  done
}

stop_daemon() {
  [ -f "$PIDFILE" ] || return 0 # not started here: nothing of ours to clean
  local pid; pid=$(cat "$PIDFILE")
  if kill -TERM "$pid" 2>/dev/null; then
    local deadline=$((SECONDS + 30))
    while kill -0 "$pid" 2>/dev/null; do
      [ $SECONDS -lt $deadline ] || { log "dockerd $pid still up after 30 s: killing it"; kill -KILL "$pid"; }
      sleep 0.5
    done
  fi
  cleanup
}

host() {
  if [ -n "${DOCKER_HOST:-}" ]; then
    answers "$DOCKER_HOST" || die "DOCKER_HOST=$DOCKER_HOST does not answer"
    echo "$DOCKER_HOST"
  elif answers unix:///var/run/docker.sock; then
    echo unix:///var/run/docker.sock
  elif answers "$SOCK"; then
    echo "$SOCK"
  else
    start_daemon
    echo "$SOCK"
  fi
}

# debian:bookworm-slim without a registry: the same minimal Debian, made here.
ensure_base() {
  docker image inspect "$BASE" >/dev/null 2>&1 && return
  docker pull -q "$BASE" >/dev/null 2>&1 && return
  install debootstrap
  local mirror dir
  mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Codename: bookworm' 2>/dev/null | sort -u | head -n 1)
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian/
  dir=$(mktemp -d)
  log "no registry: making $BASE with debootstrap from $mirror (about 30 s)"
  debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$dir.log" 2>&1 \
    || { tail -n 20 "$dir.log" >&2; rm -rf "$dir"; die "debootstrap failed ($dir.log)"; }
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
  tar -C "$dir" -c . | docker import - "$BASE" >/dev/null
  rm -rf "$dir" "$dir.log"
}

# The image's server: the newest of its kind in the test matrix, as the
# tests resolve it (RSBLOOM_REDIS86_SERVER / RSBLOOM_VALKEY9_SERVER, else
# scripts/build-servers.sh, which builds it once if missing), staged with
# its CLI into the build context.
stage_server() {
  local server=$1 flavor var bin dir=target/docker/$1
  case $server in
    redis) flavor=redis86 ;;
    valkey) flavor=valkey9 ;;
    *) die "no image for server $server (redis or valkey)" ;;
  esac
  var=RSBLOOM_${flavor^^}_SERVER
  bin=${!var:-$(scripts/build-servers.sh "$flavor")} || die "scripts/build-servers.sh $flavor failed"
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$bin" "$(dirname "$bin")/$server-cli" "$dir/" || die "no $server-cli next to $bin"
  log "server: $("$bin" --version | cut -d' ' -f1-3)"
}

build() {
  local server=${1:-redis} image=${2:-rsbloom:${1:-redis}}
  [ -f target/release/librsbloom.so ] || die "target/release/librsbloom.so missing: run cargo build --release"
  stage_server "$server"
  DOCKER_HOST=$(host)
  export DOCKER_HOST
  ensure_base
  log "building $image (SERVER=$server)"
  docker build -q --build-arg "SERVER=$server" --build-arg "BASE=$BASE" -t "$image" . >/dev/null
  docker image prune -f >/dev/null # the previous build's layers
  [ "$DOCKER_HOST" != "$SOCK" ] || log "rsbloom's own dockerd: export DOCKER_HOST=$SOCK to use it"
  echo "$image"
}

case ${1:-} in
  host) host ;;
  build) shift; build "$@" ;;
  stop) need_root; stop_daemon ;;
  *) die "usage: scripts/docker.sh host | build [redis|valkey] [IMAGE] | stop" ;;
esac
