#!/usr/bin/env bash
# Regenerates the RDB files of core/src/rdb_file/tests.rs: on each server,
# with rdbcompression+rdbchecksum on and off, a key of every type and
# encoding (small: listpack/intset; large: the real encoding, reached by
# lowering the thresholds), expiring keys, two databases, a function
# library and a key of each
# module type (target/release/librsbloom.so). Beside each <name>.rdb,
# <name>.keys: one line a key, "db key-hex pexpiretime dump-hex", the
# server's own DUMP of the key (what the reader must copy out exactly).
# Usage: core/tests/data/rdb/make.sh   (from anywhere; port 7711 free)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
so=$(cd "$here/../../../.." && pwd)/target/release/librsbloom.so
cache=/var/cache/rsbloom-servers
port=7711
servers=(
  "redis-7.0 $(command -v redis-server) $(command -v redis-cli)"
  "valkey-8.0 $(command -v valkey-server) $(command -v valkey-cli)"
  "redis-8.0 $cache/redis-8.0.6/bin/redis-server $cache/redis-8.0.6/bin/redis-cli"
  "redis-8.6 $cache/redis-8.6.3/bin/redis-server $cache/redis-8.6.3/bin/redis-cli"
  "valkey-9.1 $cache/valkey-9.1.2/bin/valkey-server $cache/valkey-9.1.2/bin/valkey-cli"
)
# 2100-01-01, so that no key expires before the tests read it.
at=4102444800000
dump='local function hex(s) return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end)) end
local out = {}
for _, k in ipairs(redis.call("KEYS", "*")) do
  out[#out + 1] = ARGV[1] .. " " .. hex(k) .. " " .. redis.call("PEXPIRETIME", k) .. " " .. hex(redis.call("DUMP", k))
end
return table.concat(out, "\n")'

fill() {
  local c=("$@")
  "${c[@]}" SET str:int 12345 >/dev/null
  "${c[@]}" SET str:raw hello >/dev/null
  "${c[@]}" SET str:long "$(printf 'abcd%.0s' {1..40})" >/dev/null
  "${c[@]}" SET "key:$(printf 'k%.0s' {1..40})" long-key >/dev/null
  "${c[@]}" SET str:ttl soon >/dev/null
  "${c[@]}" PEXPIREAT str:ttl $at >/dev/null
  "${c[@]}" RPUSH list:small a b 3 >/dev/null
  "${c[@]}" SADD set:int 1 2 3 >/dev/null
  "${c[@]}" SADD set:small a b >/dev/null
  "${c[@]}" ZADD zset:small 1 a 2.5 b >/dev/null
  "${c[@]}" HSET hash:small f v g 7 >/dev/null
  "${c[@]}" XADD stream 1-1 f v >/dev/null
  "${c[@]}" XADD stream 2-1 f w g x >/dev/null
  "${c[@]}" XGROUP CREATE stream grp 0 >/dev/null
  "${c[@]}" XREADGROUP GROUP grp alice COUNT 1 STREAMS stream '>' >/dev/null
  "${c[@]}" XADD stream 3-1 h y >/dev/null
  "${c[@]}" BF.ADD bf item >/dev/null
  "${c[@]}" CF.ADD cf item >/dev/null
  "${c[@]}" CMS.INITBYDIM cms 8 2 >/dev/null
  "${c[@]}" CMS.INCRBY cms item 3 >/dev/null
  "${c[@]}" TOPK.RESERVE topk 3 8 2 0.9 >/dev/null
  "${c[@]}" TOPK.ADD topk a b a >/dev/null
  "${c[@]}" TDIGEST.CREATE tdigest COMPRESSION 20 >/dev/null
  "${c[@]}" TDIGEST.ADD tdigest 1 2 3.5 >/dev/null
  "${c[@]}" APBF.RESERVE apbf COUNT 0.01 100 >/dev/null
  "${c[@]}" APBF.ADD apbf item >/dev/null
  "${c[@]}" PEXPIREAT apbf $at >/dev/null
  "${c[@]}" CONFIG SET bf.bloom-flavor valkey-bloom >/dev/null
  "${c[@]}" BF.RESERVE vbf 0.01 50 >/dev/null
  "${c[@]}" BF.ADD vbf item >/dev/null
  "${c[@]}" CONFIG SET bf.bloom-flavor redisbloom >/dev/null
  # Large: the real encodings.
  "${c[@]}" CONFIG SET list-max-listpack-size 2 >/dev/null 2>&1 ||
    "${c[@]}" CONFIG SET list-max-ziplist-size 2 >/dev/null
  "${c[@]}" CONFIG SET set-max-intset-entries 2 >/dev/null
  "${c[@]}" CONFIG SET zset-max-listpack-entries 2 >/dev/null
  "${c[@]}" CONFIG SET hash-max-listpack-entries 2 >/dev/null
  "${c[@]}" CONFIG SET set-max-listpack-entries 2 >/dev/null 2>&1 || true
  "${c[@]}" RPUSH list:big a b c d e >/dev/null
  "${c[@]}" SADD set:bigint 1 2 3 4 >/dev/null
  "${c[@]}" SADD set:big a b c d >/dev/null
  "${c[@]}" ZADD zset:big 1 a 2 b 3 c 4 d >/dev/null
  "${c[@]}" HSET hash:big a 1 b 2 c 3 d 4 >/dev/null
  if "${c[@]}" COMMAND INFO HPEXPIREAT | grep -q hpexpireat; then
    "${c[@]}" CONFIG SET hash-max-listpack-entries 128 >/dev/null
    "${c[@]}" HSET hash:ttl:small f v g w >/dev/null
    "${c[@]}" HPEXPIREAT hash:ttl:small $at FIELDS 1 f >/dev/null
    "${c[@]}" CONFIG SET hash-max-listpack-entries 2 >/dev/null
    "${c[@]}" HSET hash:ttl:big a 1 b 2 c 3 d 4 >/dev/null
    "${c[@]}" HPEXPIREAT hash:ttl:big $at FIELDS 2 a c >/dev/null
  fi
  # A function library: opcode FUNCTION2.
  "${c[@]}" FUNCTION LOAD "#!lua name=lib
redis.register_function('one', function() return 1 end)" >/dev/null
  "${c[@]}" -n 1 SET db1:str one >/dev/null
  "${c[@]}" -n 1 BF.ADD db1:bf item >/dev/null
  "${c[@]}" -n 1 PEXPIREAT db1:bf $at >/dev/null
}

for s in "${servers[@]}"; do
  read -r name server cli <<<"$s"
  for mode in on off; do
    yn=$([ $mode = on ] && echo yes || echo no)
    dir=$(mktemp -d)
    "$server" --port $port --save '' --appendonly no --dir "$dir" --dbfilename out.rdb \
      --rdbcompression $yn --rdbchecksum $yn --loadmodule "$so" --daemonize yes \
      --logfile "$dir/log" --pidfile "$dir/pid"
    c=("$cli" -p $port)
    for _ in $(seq 100); do "${c[@]}" PING >/dev/null 2>&1 && break; sleep 0.1; done
    fill "${c[@]}"
    "${c[@]}" SAVE >/dev/null
    cp "$dir/out.rdb" "$here/$name-$mode.rdb"
    for db in 0 1; do
      "${c[@]}" -n $db --raw EVAL "$dump" 0 $db
    done | grep . | sort >"$here/$name-$mode.keys"
    "${c[@]}" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    for _ in $(seq 100); do [ -e "$dir/pid" ] || break; sleep 0.1; done
    rm -rf "$dir"
    echo "$name-$mode: $(wc -c <"$here/$name-$mode.rdb") bytes, $(wc -l <"$here/$name-$mode.keys") keys"
  done
done
