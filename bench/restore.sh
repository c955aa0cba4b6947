#!/bin/bash
# rsbloom-copy --from-rdb's rate and peak RSS (docs/copy.md "Measured"):
# `small`, 100,000 small keys; `many`, a 2.5 GiB file of 64 MiB filters, the
# tool's address space capped far below the file's size.
# Usage: bench/restore.sh many|small (after `make build`; the servers of
# scripts/build-servers.sh; ports 7601-7602; files in $D, default /tmp).
set -e
repo=$(cd "$(dirname "$0")/.." && pwd)
D=${D:-/tmp/rsbloom-restore-bench}
W=$(ls -d /var/cache/rsbloom-servers/valkey-9.*/bin/valkey-server | sort -V | tail -n 1)
T=$(ls -d /var/cache/rsbloom-servers/redis-8.6.*/bin/redis-server | sort -V | tail -n 1)
M=$repo/target/release/librsbloom.so
BIN=$repo/target/release/rsbloom-copy
rm -rf $D/w $D/t; mkdir -p $D/w $D/t
$W --port 7601 --dir $D/w --loadmodule $M --save '' --rdbcompression no --daemonize yes --logfile $D/w.log
$T --port 7602 --dir $D/t --loadmodule $M --save '' --daemonize yes --logfile $D/t.log
for i in $(seq 50); do valkey-cli -p 7601 PING >/dev/null 2>&1 && redis-cli -p 7602 PING >/dev/null 2>&1 && break; sleep 0.2; done
case "$1" in
many)  # 40 Bloom filters of 64 MiB: a 2.5 GiB file
  for i in $(seq 40); do valkey-cli -p 7601 BF.RESERVE big:$i 0.01 56000000 NONSCALING >/dev/null; valkey-cli -p 7601 BF.ADD big:$i item$i >/dev/null; done
  valkey-cli -p 7601 PEXPIRE big:7 86400000 ;;
small)
  python3 - > $D/cmds.txt <<'PY'
import sys
def cmd(*a):
    out=[f"*{len(a)}\r\n"]
    for x in a:
        x=str(x); out.append(f"${len(x.encode())}\r\n{x}\r\n")
    sys.stdout.write("".join(out))
for i in range(20000):
    cmd("BF.ADD", f"bf:{i}", "a"); cmd("CF.ADD", f"cf:{i}", "a")
    cmd("CMS.INITBYDIM", f"cms:{i}", 20, 3); cmd("TOPK.RESERVE", f"topk:{i}", 5)
    cmd("TDIGEST.CREATE", f"td:{i}")
PY
  valkey-cli -p 7601 --pipe < $D/cmds.txt ;;
esac
valkey-cli -p 7601 SAVE
ls -la $D/w/dump.rdb
/usr/bin/time -v prlimit --as=$((768 << 20)) $BIN --from-rdb $D/w/dump.rdb --to redis://127.0.0.1:7602 --progress 30 > $D/out-$1.txt 2> $D/time-$1.txt || true
tail -n 12 $D/out-$1.txt
grep -E "Elapsed|Maximum resident|Exit status" $D/time-$1.txt
redis-cli -p 7602 DBSIZE; redis-cli -p 7602 BF.EXISTS big:3 item3; redis-cli -p 7602 PTTL big:7
valkey-cli -p 7601 SHUTDOWN NOSAVE || true
redis-cli -p 7602 SHUTDOWN NOSAVE || true
