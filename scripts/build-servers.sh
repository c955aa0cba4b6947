#!/usr/bin/env bash
# Builds the servers of the test matrix that Debian 12 has no package of
# (Redis 8.0, Redis 8.6, Valkey 9) from Debian's source packages, once, into
# a cache outside the clone, and prints the path of each server binary.
# Debian's newer suites hold them as source packages: Redis 8.0 and Valkey 9
# in trixie/sid, Redis 8.6 in experimental. The newest version of each line
# is taken (no pinned Debian revision: old ones leave the mirror).
#
# Usage: scripts/build-servers.sh [redis8|redis86|valkey9]...   (default: all)
# Cache: $RSBLOOM_SERVER_CACHE (default /var/cache/rsbloom-servers), one
# directory per build, e.g. redis-8.6.3/bin/redis-server. The source indexes
# are fetched into the cache's own apt state ($CACHE/apt), so the machine's
# apt sources stay as they are (no experimental suite in them).
set -euo pipefail
CACHE=${RSBLOOM_SERVER_CACHE:-/var/cache/rsbloom-servers}
APT_STATE=$CACHE/apt
MIRROR=${RSBLOOM_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Each flavor: package and upstream version line (the cache directory's
# prefix, so that the lines never mix: redis-8.0.6, redis-8.6.3).
declare -A PKG=([redis8]=redis [redis86]=redis [valkey9]=valkey)
declare -A LINE=([redis8]=8.0 [redis86]=8.6 [valkey9]=9)

log() { echo "build-servers: $*" >&2; }

APT_OPTS=(-o "Dir::Etc::SourceList=$APT_STATE/sources.list" -o "Dir::Etc::SourceParts=$APT_STATE/none"
  -o "Dir::State::Lists=$APT_STATE/lists" -o "Dir::Cache=$APT_STATE/cache")

# The source indexes of trixie, sid and experimental, fetched once per run.
ensure_sources() {
  [ -n "${SOURCES_READY:-}" ] && return
  [ -w "$(dirname "$CACHE")" ] || [ -w "$CACHE" ] || { log "run as root: scripts/build-servers.sh"; exit 1; }
  command -v dpkg-source >/dev/null || apt-get install -y -qq dpkg-dev
  mkdir -p "$APT_STATE/lists/partial" "$APT_STATE/cache/archives/partial" "$APT_STATE/none"
  printf "deb-src $MIRROR %s main\n" trixie sid experimental >"$APT_STATE/sources.list"
  apt-get "${APT_OPTS[@]}" update -qq
  SOURCES_READY=1
}

# Newest source version of package $1 on upstream line $2, e.g. 5:8.6.3-1.
newest_version() {
  apt-cache "${APT_OPTS[@]}" showsrc "$1" 2>/dev/null | sed -n 's/^Version: //p' \
    | while read -r v; do
        case ${v#*:} in "$2".*) echo "$v" ;; esac
      done | sort -V | tail -n 1
}

# Upstream version without epoch, Debian revision or +dfsg suffix.
upstream_of() { local u=${1#*:}; u=${u%-*}; echo "${u%%+*}"; }

build() {
  local flavor=$1 pkg line existing
  pkg=${PKG[$flavor]:-}
  [ -n "$pkg" ] || { log "unknown server $flavor (redis8, redis86, valkey9)"; exit 1; }
  line=${LINE[$flavor]}
  existing=$(ls -d "$CACHE/$pkg-$line".*/bin/"$pkg-server" 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$existing" ]; then echo "$existing"; return; fi
  ensure_sources
  local version upstream work
  version=$(newest_version "$pkg" "$line")
  [ -n "$version" ] || { log "no $pkg $line.x source package on the mirror"; exit 1; }
  upstream=$(upstream_of "$version")
  work=$(mktemp -d)
  log "building $pkg $upstream from Debian source $version (2-5 min)"
  (cd "$work" && apt-get "${APT_OPTS[@]}" source -qq "$pkg=$version" >/dev/null 2>&1) \
    || { log "apt-get source $pkg=$version failed"; exit 1; }
  local src; src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n 1)
  # Only the server and the CLI: `all` also builds the benchmark, the
  # sentinel links and the test modules.
  make -C "$src/src" -j"$(nproc)" BUILD_TLS=no "$pkg-server" "$pkg-cli" >"$work/build.log" 2>&1 \
    || { tail -n 30 "$work/build.log" >&2; log "make failed ($work/build.log)"; exit 1; }
  local dest="$CACHE/$pkg-$upstream"
  mkdir -p "$dest/bin"
  cp "$src/src/$pkg-server" "$src/src/$pkg-cli" "$dest/bin/"
  echo "$version" > "$dest/debian-source-version"
  rm -rf "$work"
  echo "$dest/bin/$pkg-server"
}

flavors=("$@")
[ ${#flavors[@]} -gt 0 ] || flavors=(redis8 redis86 valkey9)
for flavor in "${flavors[@]}"; do build "$flavor"; done
