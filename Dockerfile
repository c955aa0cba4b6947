# rsbloom loaded into Redis or Valkey, configured by redis.conf.example, data
# in the volume /data. Build: `make docker` (README "Docker"), or by hand
# after `cargo build --release`:
#   docker build --build-arg SERVER=valkey -t rsbloom:valkey .
# The module is built on the host and copied in (it is linked against glibc
# 2.36, Debian 12's, like the base): Debian 12's rustc is too old for the
# crate, and a rustup toolchain inside the build would need its own network
# access. Plain `docker build` syntax (no BuildKit features), so the legacy
# builder of Debian's docker.io builds it too.
ARG BASE=debian:bookworm-slim
FROM ${BASE}

# redis: Debian 12's redis-server (7.0); valkey: valkey-server (8.0) from
# bookworm-backports.
ARG SERVER=redis
RUN set -eux; \
    case "$SERVER" in \
      redis) pkgs=redis-server ;; \
      valkey) echo 'deb http://deb.debian.org/debian bookworm-backports main' \
                > /etc/apt/sources.list.d/bookworm-backports.list; \
              pkgs='-t bookworm-backports valkey-server' ;; \
      *) echo "SERVER must be redis or valkey, not $SERVER" >&2; exit 1 ;; \
    esac; \
    apt-get update; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $pkgs; \
    rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb; \
    ln -s "/usr/bin/$SERVER-server" /usr/local/bin/rsbloom-server; \
    ln -s "/usr/bin/$SERVER-cli" /usr/local/bin/rsbloom-cli; \
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
