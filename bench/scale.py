#!/usr/bin/env python3
"""The scale table (issue 40; RedisBloom #30 asked for it in 2018): one large
Bloom filter per row, built and carried through everything a production
filter goes through, on rsbloom and on the reference RedisBloom 2.8.2 in turn,
on one server binary (Redis 8.6: atomic slot migration needs it).

Per row and module: the fill (redis-benchmark, BF.MADD of 100 random items),
add and check rates single and x100 (the fill stops short by what the adds
add, so they bring the filter to the row's count, never past), bytes per item
(BF.INFO Size and the used_memory delta), the false-positive rate measured on
items never added against the rate the fill predicts (1 - e^(-k n/m))^k for
each link, BGSAVE and its file, the restart that loads it, a replica's full
sync, the module's own AOF rewrite (aof-use-rdb-preamble no) and its replay,
an atomic slot migration of the key's slot (CLUSTER MIGRATION IMPORT), and
rsbloom-copy between two servers. Times are wall-clock, each waited for by
polling the server's own state; ratios are reference / rsbloom for times and
rsbloom / reference for rates (> 1: rsbloom is better), one run per module.

Usage: bench/scale.py [--rows CAPxERRORxFILL,...] [--quick] [--only STEP,...]
                      [--save TABLE.md] [--reference-from-rsbloom]
Rows: capacity x error rate x items added, e.g. 100000000x0.01x50000000.
Rows of one capacity and rate share one filter per module, filled further
from row to row (fill s: the time so far). --reference-from-rsbloom: the
reference starts each row from rsbloom's RDB file of it instead of filling
(the two modules' values are the same bytes; an hour saved on the 1B row,
whose fill alone takes RedisBloom about 40 minutes); its fill shows "—".
Default: 100M and 400M at 1 % filled to 50 % and 90 %, and 1,000,000,000 at
0.1 % filled to capacity (14.4 Gbit: past 2^32 bits, where only a full
filter's false-positive rate can show the hashing). --quick: 1M-capacity rows.
Environment: as bench/bench.py (RSBLOOM_MODULE, REDISBLOOM_MODULE,
REDIS_SERVER default the cached Redis 8.6, REDIS_BENCHMARK), RSBLOOM_COPY
(default target/release/rsbloom-copy).
"""

import argparse
import atexit
import glob
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, Conn, Server, find_reference, free_port, redis_benchmark  # noqa: E402

DEFAULT_ROWS = [
    (100_000_000, 0.01, 50_000_000),
    (100_000_000, 0.01, 90_000_000),
    (400_000_000, 0.01, 200_000_000),
    (400_000_000, 0.01, 360_000_000),
    (1_000_000_000, 0.001, 1_000_000_000),
]
QUICK_ROWS = [(1_000_000, 0.01, 500_000), (1_000_000, 0.001, 900_000)]
KEY = "scale"
BATCH = 100
FP_PROBES = 1_000_000
# redis-benchmark draws each placeholder of a command anew below `-r` (an
# int): two per item make 10^18 items, so a fill of 10^8 barely repeats one
# (BF.CARD counts what did go in).
RANGE = 1_000_000_000
ITEM = "%s__rand_int__:__rand_int__"
STEPS = ["rates", "fp", "bgsave", "load", "sync", "aofrewrite", "aofload", "migrate", "copy"]


STARTED = []


def server(*args):
    """A Server stopped at exit, whatever ends the run (sys.exit included)."""
    s = Server(*args)
    STARTED.append(s)
    return s


atexit.register(lambda: [s.stop() for s in STARTED])


def newest_redis86():
    found = sorted(glob.glob("/var/cache/rsbloom-servers/redis-8.6.*/bin/redis-server"))
    return os.environ.get("REDIS_SERVER") or (found[-1] if found else "redis-server")


def info(conn, section):
    text = conn.call("INFO", section).decode()
    return dict(l.split(":", 1) for l in text.splitlines() if ":" in l)


def until(what, probe, limit=3600):
    """Polls `probe` until it returns a true value; returns (value, seconds)."""
    t0 = time.perf_counter()
    while True:
        v = probe()
        if v:
            return v, time.perf_counter() - t0
        if time.perf_counter() - t0 > limit:
            sys.exit("timed out waiting for " + what)
        time.sleep(0.01)


def bf_info(conn):
    r = conn.call("BF.INFO", KEY)
    text = lambda v: v.decode() if isinstance(v, bytes) else v  # noqa: E731
    return {text(r[i]): r[i + 1] for i in range(0, len(r), 2)}


def used_memory(s):
    return int(info(s.conn, "memory")["used_memory"])


def fill(s, row, state, after):
    """Fills the filter to the row's count less `after`, what the rates step
    adds next (so a row filled to capacity never grows a second link): the
    first row of a filter reserves it, a later one (same capacity and rate,
    more items) goes on adding; the fill time is the sum so far."""
    cap, err, n = row
    if "base" not in state:
        state.update(base=used_memory(s), fill=0.0)
        s.conn.call("BF.RESERVE", KEY, err, cap)
    todo = n - after - bf_info(s.conn)["Number of items inserted"]
    if todo > 0:
        t0 = time.perf_counter()
        redis_benchmark(s.port, todo // BATCH, 16, RANGE, ["BF.MADD", KEY] + [ITEM % "f"] * BATCH, clients=2)
        state["fill"] += time.perf_counter() - t0
    return state["fill"]


def sizes(s, state):
    bi = bf_info(s.conn)
    items = bi["Number of items inserted"]
    return {"items": items, "bytes/item (Size)": bi["Size"] / items,
            "bytes/item (used_memory)": (used_memory(s) - state["base"]) / items}


def load_snapshot(s, snapshot, state):
    """The reference's filter from rsbloom's RDB file of the same row (the
    two modules' RDB values are the same bytes): its restart, untimed."""
    s.stop()
    if "base" not in state:
        s.start()
        state.update(base=used_memory(s))
        s.stop()
    shutil.copy(snapshot, os.path.join(s.dir, "dump.rdb"))
    s.start()


def rate_count(row):
    """Commands' items per rate measured; the two add rates add twice this."""
    return max(100_000, min(2_000_000, row[0] // 100))


def rates(s, row):
    n = rate_count(row)
    r = {}
    for name, cmd, scale in [
        ("BF.ADD items/s", ["BF.ADD", KEY, ITEM % "a"], 1),
        ("BF.MADD x100 items/s", ["BF.MADD", KEY] + [ITEM % "m"] * BATCH, BATCH),
        ("BF.EXISTS items/s", ["BF.EXISTS", KEY, ITEM % "e"], 1),
        ("BF.MEXISTS x100 items/s", ["BF.MEXISTS", KEY] + [ITEM % "x"] * BATCH, BATCH),
    ]:
        r[name] = scale * redis_benchmark(s.port, n // scale, 16, RANGE, cmd, clients=2)
    return r


def expected_fp(s):
    """(1 - e^(-k n/m))^k of each link, combined: what the fill predicts."""
    miss = 1.0
    debug = s.conn.call("BF.DEBUG", KEY)
    for line in debug[1:]:
        f = dict(kv.split(":") for kv in line.decode().split())
        bits, hashes, size = int(f["bits"]), int(f["hashes"]), int(f["size"])
        miss *= 1 - (1 - math.exp(-hashes * size / bits)) ** hashes
    return 1 - miss


def fp(s, row):
    hits = 0
    conn = s.conn
    for start in range(0, FP_PROBES, BATCH * 100):
        cmds = [["BF.MEXISTS", KEY] + [b"absent:%d" % i for i in range(b, b + BATCH)]
                for b in range(start, min(FP_PROBES, start + BATCH * 100), BATCH)]
        for c in cmds:
            conn.sock.sendall(Conn.encode(*c))
        for _ in cmds:
            hits += sum(conn.read())
    return {"FP rate": hits / FP_PROBES, "FP rate expected": expected_fp(s)}


def bgsave(s, row):
    s.conn.call("BGSAVE")
    _, took = until("BGSAVE", lambda: info(s.conn, "persistence")["rdb_bgsave_in_progress"] == "0"
                    and int(info(s.conn, "persistence")["rdb_last_save_time"]) > 0)
    size = os.path.getsize(os.path.join(s.dir, "dump.rdb"))
    return {"BGSAVE s": took, "RDB MB": size / 1e6}


def digest(conn):
    return conn.call("DEBUG", "DIGEST-VALUE", KEY)


def load(s, row):
    want = digest(s.conn)
    s.stop()
    took = s.start()
    assert digest(s.conn) == want, "reloaded filter differs"
    return {"load s": took}


def sync(s, row, workdir, module):
    r = server(s.name + "-replica", module, workdir, s.binary)
    r.start()
    s.conn.call("CONFIG", "SET", "repl-diskless-sync-delay", "0")
    t0 = time.perf_counter()
    r.conn.call("REPLICAOF", "127.0.0.1", s.port)
    until("full sync", lambda: info(r.conn, "replication").get("master_link_status") == "up"
          and info(r.conn, "persistence").get("loading") == "0")
    took = time.perf_counter() - t0
    assert digest(r.conn) == digest(s.conn), "replica differs"
    r.stop()
    return {"replica sync s": took}


def aof(s, row):
    s.conn.call("CONFIG", "SET", "aof-use-rdb-preamble", "no")
    t0 = time.perf_counter()
    s.conn.call("CONFIG", "SET", "appendonly", "yes")
    def rewritten():
        i = info(s.conn, "persistence")
        return i["aof_rewrite_in_progress"] == "0" and i["aof_rewrite_scheduled"] == "0" and i["aof_rewrites"] != "0"
    until("AOF rewrite", rewritten)
    return {"AOF rewrite s": time.perf_counter() - t0}


def aof_load(s, row):
    want = digest(s.conn)
    s.stop()
    s.args += ["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]
    took = s.start()
    assert digest(s.conn) == want, "AOF replay differs"
    return {"AOF replay s": took}


def cluster_node(name, module, workdir, binary):
    bus = free_port()
    n = server(name, module, workdir, binary, ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                                 "--cluster-node-timeout", "60000", "--cluster-port", str(bus)])
    n.bus = bus
    n.start()
    return n


def cluster_ok(n):
    text = n.conn.call("CLUSTER", "INFO").decode()
    return "cluster_state:ok" in text and "cluster_known_nodes:2" in text


def migrate(s, row, workdir, module):
    """The key's slot moved by atomic slot migration to an empty node."""
    src = cluster_node(s.name + "-asm-src", module, workdir, s.binary)
    src.conn.call("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
    # The filter, through the source's own RDB loader.
    s.conn.call("SAVE")
    shutil.copy(os.path.join(s.dir, "dump.rdb"), os.path.join(src.dir, "dump.rdb"))
    src.conn.call("DEBUG", "RELOAD", "NOSAVE")
    dst = cluster_node(s.name + "-asm-dst", module, workdir, s.binary)
    dst.conn.call("CLUSTER", "MEET", "127.0.0.1", src.port, src.bus)
    until("a cluster of two", lambda: cluster_ok(src) and cluster_ok(dst), 120)
    slot = src.conn.call("CLUSTER", "KEYSLOT", KEY)
    t0 = time.perf_counter()
    dst.conn.call("CLUSTER", "MIGRATION", "IMPORT", slot, slot)
    until("slot migrated", lambda: dst.conn.call("CLUSTER", "COUNTKEYSINSLOT", slot) == 1
          and src.conn.call("CLUSTER", "COUNTKEYSINSLOT", slot) == 0)
    took = time.perf_counter() - t0
    assert digest(dst.conn) == digest(s.conn), "migrated filter differs"
    src.stop()
    dst.stop()
    return {"slot migration s": took}


def copy(s, row, workdir, module):
    dst = server(s.name + "-copy", module, workdir, s.binary)
    dst.start()
    tool = os.environ.get("RSBLOOM_COPY", os.path.join(ROOT, "target/release/rsbloom-copy"))
    t0 = time.perf_counter()
    subprocess.run([tool, "--from", "redis://127.0.0.1:%d" % s.port, "--to", "redis://127.0.0.1:%d" % dst.port,
                    "--match", KEY], check=True, stdout=subprocess.DEVNULL)
    took = time.perf_counter() - t0
    assert digest(dst.conn) == digest(s.conn), "copied filter differs"
    dst.stop()
    return {"rsbloom-copy s": took}


def measure(name, module, rows, steps, binary, snapshots):
    """The rows of one filter (same capacity and rate, fills ascending) on
    one module, one result per row. `snapshots`: None, or row -> RDB file,
    which rsbloom (`save`) writes after each fill and the reference
    (`load`) starts from instead of filling."""
    mode, files = snapshots or (None, None)
    results = []
    with tempfile.TemporaryDirectory(prefix="scale-") as workdir:
        s = server(name, module, workdir, binary)
        s.start()
        state = {}
        for i, row in enumerate(rows):
            # Each row's replica, cluster nodes and copy target start empty.
            rowdir = os.path.join(workdir, "row%d" % i)
            # redis-benchmark may send each client's last pipeline whole:
            # up to 2 x 16 commands of 100 items past -n, in the fill and
            # in the rates' BF.MADD.
            added = 2 * rate_count(row) + 2 * 2 * 16 * BATCH if "rates" in steps else 0
            if mode == "load":
                load_snapshot(s, files[row], state)
                out = {"fill s": None}
            else:
                out = {"fill s": fill(s, row, state, added)}
            if mode == "save":
                s.conn.call("SAVE")
                shutil.copy(os.path.join(s.dir, "dump.rdb"), files[row])
            print("  %s %s filled" % (name, row), file=sys.stderr)
            # The rates' adds bring the filter to the row's count: sizes
            # and every later step see it there.
            measured = rates(s, row) if added else {}
            out.update(sizes(s, state))
            out.update(measured)
            for step in (x for x in steps if x != "rates"):
                f = {"fp": fp, "bgsave": bgsave, "load": load, "aofrewrite": aof,
                     "aofload": aof_load}.get(step)
                if f:
                    out.update(f(s, row))
                else:
                    out.update({"sync": sync, "migrate": migrate, "copy": copy}[step](s, row, rowdir, module))
                print("  %s %s done" % (name, step), file=sys.stderr)
            # The next row goes on from the RDB's state, not the AOF's.
            if "--appendonly" in s.args:
                s.args = s.args[:s.args.index("--appendonly")]
            s.conn.call("CONFIG", "SET", "appendonly", "no")
            results.append(out)
        s.stop()
    return results


def better(metric):
    """Whether a larger value is better (rates), smaller (times, sizes), or neither."""
    if metric.endswith("/s"):
        return 1
    if metric.endswith(" s") or "bytes" in metric or metric == "RDB MB":
        return -1
    return 0


def fmt(v):
    if v is None:
        return "—"
    if isinstance(v, float) and v < 0.01:
        return "%.3g" % v
    if isinstance(v, float):
        return "{:,.2f}".format(v) if v < 1000 else "{:,.0f}".format(v)
    return "{:,}".format(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", help="steps, of: " + ",".join(STEPS))
    ap.add_argument("--save")
    ap.add_argument("--reference-from-rsbloom", action="store_true",
                    help="the reference loads rsbloom's RDB file of each row instead of filling (no fill time)")
    a = ap.parse_args()
    rows = [tuple(t(x) for t, x in zip((int, float, int), r.split("x"))) for r in a.rows.split(",")] \
        if a.rows else (QUICK_ROWS if a.quick else DEFAULT_ROWS)
    steps = a.only.split(",") if a.only else STEPS
    binary = newest_redis86()
    modules = [("rsbloom", os.environ.get("RSBLOOM_MODULE", os.path.join(ROOT, "target/release/librsbloom.so"))),
               ("RedisBloom 2.8.2", find_reference())]
    probe = server("probe", modules[0][1], tempfile.mkdtemp(prefix="scale-"), binary)
    probe.start()
    version = probe.version()
    probe.stop()
    lines = ["Scale table: %s, one run per module (bench/scale.py%s)" % (version, " " + " ".join(sys.argv[1:]) if sys.argv[1:] else ""),
             "", "| filter | metric | rsbloom | RedisBloom 2.8.2 | ratio |", "|---|---|---:|---:|---:|"]
    # Rows of one capacity and rate share a filter, filled further row by row.
    filters = {}
    for row in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
        filters.setdefault(row[:2], []).append(row)
    snapdir = tempfile.mkdtemp(prefix="scale-rdb-")
    atexit.register(shutil.rmtree, snapdir, True)
    for group in filters.values():
        print(", ".join(map(str, group)), file=sys.stderr)
        files = {row: os.path.join(snapdir, "row%d.rdb" % i) for i, row in enumerate(group)}
        modes = [("save", files), ("load", files)] if a.reference_from_rsbloom else [None, None]
        results = [measure(n, m, group, steps, binary, snap) for (n, m), snap in zip(modules, modes)]
        for row, rs_row, ref_row in zip(group, *results):
            label = "{:,} at {:g} %, {:,} added".format(row[0], row[1] * 100, row[2])
            for metric in rs_row:
                rs, ref = rs_row[metric], ref_row[metric]
                b = better(metric)
                ratio = "" if not b or not rs or not ref else "%.2f×" % ((rs / ref) if b > 0 else (ref / rs))
                lines.append("| %s | %s | %s | %s | %s |" % (label, metric, fmt(rs), fmt(ref), ratio))
        # A filter's rows as soon as they are measured: a later one may fail.
        print("\n".join(lines), file=sys.stderr)
        if a.save:
            with open(a.save, "w") as f:
                f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    if a.save:
        with open(a.save, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
