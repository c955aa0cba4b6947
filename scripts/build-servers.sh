#!/usr/bin/env bash
# Builds the newer servers of the test matrix (Redis 8.x, Valkey 9.x) from
# Debian's source packages, once, into a cache outside the clone, and prints
# the path of each server binary. Debian 12 has neither as a binary package;
# its mirror has both as source packages of the newer suites. The newest
# version the suites hold is taken (no pinned Debian revision: old ones leave
# the mirror).
#
# Usage: scripts/build-servers.sh [redis|valkey]...   (default: both)
# Cache: $RSBLOOM_SERVER_CACHE (default /var/cache/rsbloom-servers), one
# directory per build, e.g. redis-8.0.6/bin/redis-server.
set -euo pipefail
CACHE=${RSBLOOM_SERVER_CACHE:-/var/cache/rsbloom-servers}
SOURCES=/etc/apt/sources.list.d/rsbloom-src.list
# Which upstream major line each package must be on (Debian's suites also
# hold older lines: trixie has valkey 8.1).
declare -A WANT=([redis]=8 [valkey]=9)

log() { echo "build-servers: $*" >&2; }

ensure_sources() {
  if [ ! -f "$SOURCES" ]; then
    [ "$(id -u)" = 0 ] || { log "run as root: scripts/build-servers.sh"; exit 1; }
    printf 'deb-src http://deb.debian.org/debian %s main\n' trixie sid > "$SOURCES"
    apt-get update -qq
  fi
  command -v dpkg-source >/dev/null || apt-get install -y -qq dpkg-dev
}

# Newest source version of package $1 on upstream major line $2, e.g. 5:8.0.6-3.
newest_version() {
  apt-cache showsrc "$1" 2>/dev/null | sed -n 's/^Version: //p' \
    | while read -r v; do
        upstream=${v#*:}
        [ "${upstream%%.*}" = "$2" ] && echo "$v"
      done | sort -V | tail -n 1
}

# Upstream version without epoch, Debian revision or +dfsg suffix.
upstream_of() { local u=${1#*:}; u=${u%-*}; echo "${u%%+*}"; }

build() {
  local pkg=$1 existing
  existing=$(ls -d "$CACHE/$pkg-${WANT[$pkg]}".*/bin/"$pkg-server" 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$existing" ]; then echo "$existing"; return; fi
  ensure_sources
  local version upstream work
  version=$(newest_version "$pkg" "${WANT[$pkg]}")
  [ -n "$version" ] || { log "no $pkg ${WANT[$pkg]}.x source package on the mirror"; exit 1; }
  upstream=$(upstream_of "$version")
  work=$(mktemp -d)
  log "building $pkg $upstream from Debian source $version (2-3 min)"
  (cd "$work" && apt-get source -qq "$pkg=$version" >/dev/null 2>&1) \
    || { log "apt-get source $pkg=$version failed"; exit 1; }
  local src; src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
  make -C "$src" -j"$(nproc)" BUILD_TLS=no >"$work/build.log" 2>&1 \
    || { tail -n 30 "$work/build.log" >&2; log "make failed ($work/build.log)"; exit 1; }
  local dest="$CACHE/$pkg-$upstream"
  mkdir -p "$dest/bin"
  cp "$src/src/$pkg-server" "$src/src/$pkg-cli" "$dest/bin/"
  echo "$version" > "$dest/debian-source-version"
  rm -rf "$work"
  echo "$dest/bin/$pkg-server"
}

pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(redis valkey)
for pkg in "${pkgs[@]}"; do build "$pkg"; done
