# rsbloom loaded into Redis or Valkey, configured by redis.conf.example, data
# in the volume /data. Build: `make docker` (docs/docker.md), or after
# `cargo build --release`: `scripts/docker.sh build valkey` (it stages the
# server binaries, then runs `docker build --build-arg SERVER=valkey .`).
# The module is built on the host and copied in (it is linked against glibc
# 2.36, Debian 12's, like the base): Debian 12's rustc is too old for the
# crate, and a rustup toolchain inside the build would need its own network
# access. Plain `docker build` syntax (no BuildKit features), so the legacy
# builder of Debian's docker.io builds it too.
ARG BASE=debian:bookworm-slim
FROM ${BASE}

# redis: Redis 8.6.x; valkey: Valkey 9.x — the newest servers of the test
# matrix, which Debian 12 has no package of. scripts/docker.sh stages the
# binaries scripts/build-servers.sh built from Debian's source packages on
# this same Debian 12 (same glibc; they need nothing beyond the base image)
# into target/docker/$SERVER/; building them here instead would need the
# Debian mirror and minutes per image.
ARG SERVER=redis
COPY target/docker/${SERVER}/ /usr/local/bin/
RUN set -eux; \
    case "$SERVER" in \
      redis|valkey) ;; \
      *) echo "SERVER must be redis or valkey, not $SERVER" >&2; exit 1 ;; \
    esac; \
    useradd --system --user-group --home-dir /data --no-create-home --shell /usr/sbin/nologin "$SERVER"; \
    ln -s "$SERVER-server" /usr/local/bin/rsbloom-server; \
    ln -s "$SERVER-cli" /usr/local/bin/rsbloom-cli; \
    "$SERVER-server" --version; \
    mkdir -p /data; \
    chown "$SERVER:$SERVER" /data

COPY target/release/librsbloom.so /usr/lib/rsbloom/librsbloom.so
COPY redis.conf.example /etc/rsbloom/rsbloom.conf
# The example's settings, except what a container needs: the module's path,
# clients from other hosts (no password: set --requirepass for anything
# exposed), the data directory, and snapshots so a stop keeps the data.
RUN set -eux; \
    sed -i 's|^loadmodule .*|loadmodule /usr/lib/rsbloom/librsbloom.so|' /etc/rsbloom/rsbloom.conf; \
    printf '%s\n' '' '# Container settings (Dockerfile).' 'bind * -::*' 'protected-mode no' \
      'dir /data' 'save 3600 1 300 100 60 10000' >> /etc/rsbloom/rsbloom.conf

VOLUME /data
WORKDIR /data
EXPOSE 6379
USER ${SERVER}
# Arguments of `docker run IMAGE ...` are server options, e.g. --appendonly yes.
ENTRYPOINT ["rsbloom-server", "/etc/rsbloom/rsbloom.conf"]
