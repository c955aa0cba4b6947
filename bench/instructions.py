#!/usr/bin/env python3
"""Instructions per command, rsbloom against RedisBloom 2.8.2: the
noise-free side of bench/bench.py's comparison rows, whose single-command
ratios this host's noise moves by 10-20 % from run to run.

Each row runs a fresh server per module under callgrind (valgrind), builds
the key as the comparison row does (smaller where size does not change the
path), warms it with 200 commands, zeroes the counters and sends N commands
pipelined 50 at a time (N/10 for 100-item batches). The count is what runs
inside the server's RedisModuleCommandDispatcher per command: the module's
work and the server API it calls (key lookups, replies, replication,
keyspace events); the server's reading, parsing and writing around it are
the same for both and left out.

--cache adds callgrind's cache simulation (32 KiB 8-way L1 caches of 64-byte
lines, as this host's Zen 3) and prints, per command, the whole server's
instructions and L1 instruction and data misses: two modules of equal
instruction counts differ there by how much of the server's own code and
data their command evicts. Misses depend on where code lands in the cache
sets, hence on the server binary: run it on the one bench/bench.py uses
(REDIS_SERVER=/usr/bin/redis-server for Debian's 7.0.15).

Usage: bench/instructions.py [--only SUBSTRING,...] [--cache] [N]   (default 3000)
Environment: RSBLOOM_MODULE (default target/release/librsbloom.so),
REDISBLOOM_MODULE, REDIS_SERVER (default: the newest cached Redis 8.6).
"""

import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, find_reference  # noqa: E402
from scale import newest_redis86  # noqa: E402
from window_instructions import profile  # noqa: E402


def fill_chain(c):
    """bench.py's 10-link chain: capacity 1000, expansion 2, 1,030,000 items."""
    c.pipeline((["BF.MADD", "k"] + [b"c%d" % j for j in range(i, i + 1000)]
                for i in range(0, 1_030_000, 1000)), window=8)


def fill_digest(c):
    c.pipeline((["TDIGEST.ADD", "k"] + [b"%d.%03d" % ((i * 7919) % 100003, i % 1000)
                                      for i in range(start, start + 1000)]
                for start in range(0, 100_000, 1000)), window=8)
    c.call("TDIGEST.QUANTILE", "k", "0.5")


def batch(prefix, pairs=False):
    return [x for i in range(100) for x in ((prefix + "%d_" + str(i),) + (("1",) if pairs else ()))]


BF = ["BF.RESERVE", "k", "0.01", "1000000"]
CF = ["CF.RESERVE", "k", "2000000"]
CMS = ["CMS.INITBYDIM", "k", "2000", "5"]
TOPK = ["TOPK.RESERVE", "k", "50", "2000", "7", "0.9"]
TD = ["TDIGEST.CREATE", "k"]
# name, create, setup, command (%d: the command's number)
ROWS = [
    ("BF.ADD, 1M filter", BF, None, ["BF.ADD", "k", "i%d"]),
    ("BF.EXISTS, 1M filter", BF, None, ["BF.EXISTS", "k", "i%d"]),
    ("CF.ADD, 2M filter", CF, None, ["CF.ADD", "k", "i%d"]),
    ("CF.EXISTS, 2M filter", CF, None, ["CF.EXISTS", "k", "i%d"]),
    ("BF.EXISTS, 10-link chain", ["BF.RESERVE", "k", "0.01", "1000", "EXPANSION", "2"], fill_chain,
     ["BF.EXISTS", "k", "i%d"]),
    ("BF.MADD x100", BF, None, ["BF.MADD", "k"] + batch("a")),
    ("BF.MEXISTS x100", BF, None, ["BF.MEXISTS", "k"] + batch("q")),
    ("CF.INSERT x100", CF, None, ["CF.INSERT", "k", "ITEMS"] + batch("a")),
    ("CF.MEXISTS x100", CF, None, ["CF.MEXISTS", "k"] + batch("q")),
    ("CMS.INCRBY", CMS, None, ["CMS.INCRBY", "k", "i%d", "1"]),
    ("CMS.QUERY", CMS, None, ["CMS.QUERY", "k", "i%d"]),
    ("CMS.INCRBY x100", CMS, None, ["CMS.INCRBY", "k"] + batch("a", pairs=True)),
    ("CMS.QUERY x100", CMS, None, ["CMS.QUERY", "k"] + batch("q")),
    ("TOPK.ADD", TOPK, None, ["TOPK.ADD", "k", "i%d"]),
    ("TOPK.ADD x100", TOPK, None, ["TOPK.ADD", "k"] + batch("t")),
    ("TOPK.LIST WITHCOUNT", TOPK, None, ["TOPK.LIST", "k", "WITHCOUNT"]),
    ("TDIGEST.ADD, 1 value", TD, None, ["TDIGEST.ADD", "k", "%d"]),
    ("TDIGEST.ADD x100", TD, None, ["TDIGEST.ADD", "k"] + ["%d.5"] * 100),
    ("TDIGEST.QUANTILE x10", TD, fill_digest, ["TDIGEST.QUANTILE", "k"] + ["0.%d5" % i for i in range(10)]),
    ("TDIGEST.CDF x10", TD, fill_digest, ["TDIGEST.CDF", "k"] + [str(i * 10000) for i in range(9)] + ["%d"]),
]


def dispatcher(part, n):
    """Instructions inside RedisModuleCommandDispatcher per command."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", part],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if "RedisModuleCommandDispatcher [" in line:
            return int(line.split()[0].replace(",", "")) / n
    sys.exit("no RedisModuleCommandDispatcher in " + part)


CACHE_SIM = ["--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64", "--LL=1048576,16,64"]


def whole_server(part, n):
    """(instructions, L1-I misses, L1-D misses) of the whole server per
    command, from a profile with the cache simulation."""
    events = totals = None
    for line in open(part):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith(("summary:", "totals:")):
            totals = [int(x) for x in line.split()[1:]]
    e = dict(zip(events, totals))
    return e["Ir"] / n, e["I1mr"] / n, (e["D1mr"] + e["D1mw"]) / n


def counted(part, n, measure=dispatcher):
    """`measure` of the profile, its directory then removed."""
    try:
        return measure(part, n)
    finally:
        shutil.rmtree(os.path.dirname(part), ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--cache", action="store_true", help="whole-server L1 misses per command")
    ap.add_argument("n", nargs="?", type=int, default=3000)
    a = ap.parse_args()
    binary = newest_redis86()
    modules = [os.environ.get("RSBLOOM_MODULE", os.path.join(ROOT, "target/release/librsbloom.so")),
               find_reference()]
    only = [o for o in a.only.split(",") if o]
    server = os.path.basename(binary.rsplit("/bin/", 1)[0])
    if a.cache:
        print("Whole server per command (callgrind, 32 KiB 8-way L1s), %s\n" % binary)
        print("| command | rsbloom instructions | L1-I misses | L1-D misses "
              "| RedisBloom 2.8.2 instructions | L1-I misses | L1-D misses |")
        print("|---|---:|---:|---:|---:|---:|---:|")
    else:
        print("Instructions per command inside RedisModuleCommandDispatcher (callgrind), %s\n" % server)
        print("| command | rsbloom | RedisBloom 2.8.2 | RedisBloom / rsbloom |")
        print("|---|---:|---:|---:|")
    for name, create, setup, cmd in ROWS:
        if only and not any(o in name for o in only):
            continue
        n = a.n // 10 if "x100" in name else a.n
        if a.cache:
            rs, ref = (counted(profile(m, binary, create, cmd, n, setup, CACHE_SIM), n, whole_server)
                       for m in modules)
            print("| %s | %s |" % (name, " | ".join("{:,.1f}".format(x) for x in rs + ref)), flush=True)
        else:
            rs, ref = (counted(profile(m, binary, create, cmd, n, setup), n) for m in modules)
            print("| %s | {:,.0f} | {:,.0f} | %.2f |".format(rs, ref) % (name, ref / rs), flush=True)


if __name__ == "__main__":
    main()
