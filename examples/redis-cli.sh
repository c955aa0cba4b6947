#!/bin/sh
# rsbloom from the shell: redis-cli (valkey-cli works the same). Prints each
# command and its reply; examples/redis-cli.out is what it prints.
# Run: examples/redis-cli.sh [PORT]
set -eu
port=${1:-6379}
cli() { redis-cli -p "$port" --no-raw "$@"; }
run() { echo "> $*"; cli "$@"; }
cli DEL bf bf-copy cf cf-copy >/dev/null

# Bloom filter: 1000 items at 0.1 % false positives.
run BF.RESERVE bf 0.001 1000
run BF.ADD bf apple
run BF.MADD bf banana cherry
run BF.EXISTS bf apple
run BF.MEXISTS bf banana durian
run BF.INFO bf

# Cuckoo filter: items can be counted and deleted.
run CF.RESERVE cf 1000
run CF.ADD cf apple
run CF.ADDNX cf apple
run CF.INSERT cf ITEMS banana cherry
run CF.EXISTS cf banana
run CF.COUNT cf apple
run CF.DEL cf banana
run CF.MEXISTS cf banana cherry
run CF.INFO cf

# SCANDUMP / LOADCHUNK: copy each filter chunk by chunk (e.g. to another
# server). Chunks are binary: --no-raw prints them quoted with \x escapes,
# and redis-cli reads such quoted arguments back from its standard input.
for family in BF CF; do
  key=$(echo "$family" | tr A-Z a-z)
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
run BF.MEXISTS bf-copy apple banana cherry durian
run CF.MEXISTS cf-copy apple banana cherry
