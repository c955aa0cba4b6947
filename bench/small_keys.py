#!/usr/bin/env python3
"""Memory of many small filters (issue 40): used_memory per key and MEMORY
USAGE per key, rsbloom against its peers.

For each shape, a fresh server per module receives KEYS keys (default
20,000), each created by the shape's command and given 20 items (600 for
the grown filter: three links), and the growth of `used_memory` over them
is divided by KEYS. Memory figures are
deterministic (the same allocations in the same size classes), so one run
is enough and a busy machine does not matter.

  * Redis 8.6: rsbloom (default flavour) against RedisBloom 2.8.2, for
    BF.RESERVE k 0.01 100 / 1000 (and 100 grown) and CF.RESERVE k 1000;
  * Valkey 9.1: rsbloom with bf.bloom-flavor valkey-bloom against
    valkey-bloom 1.0.1, for BF.RESERVE k 0.01 100 / 1000 (and 100 grown);
  * on both, a plain string of 120 bytes: the server's own per-key cost.

Usage: bench/small_keys.py [--keys N] [--save TABLE.md]
Environment: RSBLOOM_MODULE (default target/release/librsbloom.so),
REDISBLOOM_MODULE, REDIS_SERVER (default the newest redis-8.6.* that
scripts/build-servers.sh cached), VALKEY_SERVER, VALKEY_BLOOM_MODULE.
"""

import argparse
import glob
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, VALKEY_BLOOM, VB_CONFIG, Server, find_reference  # noqa: E402

ITEMS = 20


def newest(pattern):
    hits = sorted(glob.glob("/var/cache/rsbloom-servers/%s/bin/*-server" % pattern))
    return hits[-1] if hits else None


# A per-user filter that grew: BF.ADD's default filter (capacity 100,
# expansion 2) with 600 items has three links (100, 200, 400).
GROWN = "BF.RESERVE 0.01 100, 600 items"


def shape_commands(shape, key):
    """The commands that build one key of `shape`."""
    items = [b"%s:%d" % (key, i) for i in range(600 if shape == GROWN else ITEMS)]
    if shape == GROWN:
        return [["BF.RESERVE", key, "0.01", "100"], ["BF.MADD", key] + items]
    if shape == "string 120 B":
        return [["SET", key, b"x" * 120]]
    if shape.startswith("BF.RESERVE"):
        capacity = shape.split()[-1]
        return [["BF.RESERVE", key, "0.01", capacity], ["BF.MADD", key] + items]
    if shape == "CF.RESERVE 1000":
        return [["CF.RESERVE", key, "1000"], ["CF.INSERT", key, "ITEMS"] + items]
    raise ValueError(shape)


def used(c):
    info = c.call("INFO", "memory").decode()
    return int(next(l.split(":")[1] for l in info.splitlines() if l.startswith("used_memory:")))


def measure(server, shape, keys):
    """(used_memory per key, MEMORY USAGE per key) for `keys` keys."""
    c = server.conn
    # First use of a type allocates module-wide state once.
    c.pipeline(shape_commands(shape, b"warm"))
    c.call("DEL", b"warm")
    names = [b"key:%d" % i for i in range(keys)]
    before = used(c)
    c.pipeline(cmd for k in names for cmd in shape_commands(shape, k))
    after = used(c)
    usage = 0
    for k in names:
        usage += c.call("MEMORY", "USAGE", k, "SAMPLES", "0")
    c.call("FLUSHALL")
    return (after - before) / keys, usage / keys


def run(name, module, binary, args, shapes, keys, workdir):
    out = {}
    for shape in shapes:
        s = Server(name, module, workdir, binary, args)
        s.start()
        try:
            out[shape] = measure(s, shape, keys)
            out["version"] = s.version()
        finally:
            s.stop()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=20_000)
    ap.add_argument("--save", help="also write the table to this file")
    args = ap.parse_args()
    rs = os.environ.get("RSBLOOM_MODULE", os.path.join(ROOT, "target/release/librsbloom.so"))
    redis = os.environ.get("REDIS_SERVER") or newest("redis-8.6.*")
    valkey = os.environ.get("VALKEY_SERVER") or newest("valkey-9.*")
    vb = os.environ.get("VALKEY_BLOOM_MODULE", VALKEY_BLOOM)
    for path, what in ((rs, "rsbloom module"), (redis, "Redis 8.6 server"), (valkey, "Valkey 9 server")):
        if not path or not os.path.exists(path):
            sys.exit("%s not found: %s" % (what, path))
    bf = ["BF.RESERVE 0.01 100", "BF.RESERVE 0.01 1000", GROWN]
    plain = ["string 120 B"]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        sides = [
            ("rsbloom", "RedisBloom 2.8.2",
             run("rsbloom", rs, redis, [], plain + bf + ["CF.RESERVE 1000"], args.keys, work),
             run("redisbloom", find_reference(), redis, [], plain + bf + ["CF.RESERVE 1000"], args.keys, work)),
            ("rsbloom valkey-bloom flavour", "valkey-bloom 1.0.1",
             run("rsbloom-vb", rs, valkey, ["--bf.bloom-flavor", "valkey-bloom"] + VB_CONFIG,
                 plain + bf, args.keys, work),
             run("valkey-bloom", vb, valkey, VB_CONFIG, plain + bf, args.keys, work)),
        ]
        for ours, peer, a, b in sides:
            for shape in (k for k in a if k != "version"):
                (ua, ma), (ub, mb) = a[shape], b[shape]
                rows.append((a["version"], shape, ours, peer, ua, ub, ua / ub, ma, ma / ua, mb, mb / ub))
    head = ("| server | keys of | rsbloom | peer | used_memory/key rsbloom | peer | ratio "
            "| MEMORY USAGE/key rsbloom | ÷ used | peer | ÷ used |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        lines.append("| %s | %s | %s | %s | %.0f B | %.0f B | %.2f× | %.0f B | %.2f | %.0f B | %.2f |" % r)
    lines.append("")
    lines.append("%d keys per shape, each with %d items but the grown filter (bench/small_keys.py)."
                 % (args.keys, ITEMS))
    text = "\n".join(lines)
    print(text)
    if args.save:
        with open(args.save, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
