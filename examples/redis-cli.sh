#!/bin/sh
# rsbloom from the shell: redis-cli (valkey-cli works the same). One small
# real use per family; prints each command and its reply, and
# examples/redis-cli.out is what it prints.
# Run: examples/redis-cli.sh [PORT]
set -eu
port=${1:-6379}
cli() { redis-cli -p "$port" --no-raw "$@"; }
run() { echo "> $*"; cli "$@"; }
cli DEL crawled crawled-copy online online-copy hits top-products latency >/dev/null

# Bloom filter: de-duplicate. A crawler visits each URL once: "0" means
# certainly new, "1" already seen (or, 0.1 % of the time, a false positive).
run BF.RESERVE crawled 0.001 1000
run BF.ADD crawled https://example.com/
run BF.MADD crawled https://example.com/a https://example.com/b
run BF.EXISTS crawled https://example.com/
run BF.MEXISTS crawled https://example.com/b https://example.com/c
run BF.INFO crawled

# Cuckoo filter: membership you can delete from. Who is online: log in
# adds, log out deletes.
run CF.RESERVE online 1000
run CF.ADD online alice
run CF.ADDNX online alice
run CF.INSERT online ITEMS bob carol
run CF.EXISTS online bob
run CF.COUNT online alice
run CF.DEL online bob
run CF.MEXISTS online bob carol
run CF.INFO online

# Count-Min Sketch: frequencies in fixed memory. Requests per client IP;
# a count is never under the truth and at most 0.1 % of all requests over
# it, with 99 % probability.
run CMS.INITBYPROB hits 0.001 0.01
run CMS.INCRBY hits 10.0.0.1 5 10.0.0.2 1
run CMS.INCRBY hits 10.0.0.1 2
run CMS.QUERY hits 10.0.0.1 10.0.0.2 10.0.0.3
run CMS.INFO hits

# Top-K: heavy hitters. The 3 most viewed products of a stream of views;
# TOPK.ADD answers the item each view pushed out of the top 3, if any.
run TOPK.RESERVE top-products 3 50 4 0.9
run TOPK.ADD top-products shoes hat shoes socks shoes hat scarf
run TOPK.INCRBY top-products socks 4 belt 1
run TOPK.LIST top-products WITHCOUNT
run TOPK.QUERY top-products shoes scarf

# T-Digest: percentiles of a stream. Request latencies in milliseconds, two
# of 16 slow: median, 90th and 99th percentile, and the share under 20 ms.
run TDIGEST.CREATE latency
run TDIGEST.ADD latency 12 15 11 14 13 12 16 11 13 250 12 14 13 15 90 12
run TDIGEST.QUANTILE latency 0.5 0.9 0.99
run TDIGEST.CDF latency 20
run TDIGEST.MIN latency
run TDIGEST.MAX latency

# SCANDUMP / LOADCHUNK: copy each filter chunk by chunk (e.g. to another
# server). Chunks are binary: --no-raw prints them quoted with \x escapes,
# and redis-cli reads such quoted arguments back from its standard input.
for pair in BF:crawled CF:online; do
  family=${pair%%:*} key=${pair#*:}
  iter=0
  while :; do
    out=$(cli "$family.SCANDUMP" "$key" "$iter")
    iter=$(printf '%s\n' "$out" | sed -n '1s/^1) (integer) //p')
    [ "$iter" != 0 ] || break
    chunk=$(printf '%s\n' "$out" | sed -n '2s/^2) //p')
    echo "> $family.LOADCHUNK $key-copy $iter <chunk of $family.SCANDUMP $key>"
    printf '%s.LOADCHUNK %s-copy %s %s\n' "$family" "$key" "$iter" "$chunk" | cli
  done
done
run BF.MEXISTS crawled-copy https://example.com/ https://example.com/c
run CF.MEXISTS online-copy alice bob carol
