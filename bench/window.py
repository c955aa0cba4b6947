#!/usr/bin/env python3
"""Time windows (issue 38): accuracy and speed of rsbloom's windowed
Count-Min Sketch, Top-K and T-Digest against what users do today.

Today's ways (one key per minute):
  counts:      a CMS per minute; a read is CMS.MERGE of the last 60 into a
               scratch key and CMS.QUERY of it, or 60 pipelined CMS.QUERY;
  top items:   a sorted set per minute (ZINCRBY); a read is ZUNIONSTORE of
               the last 60 and ZREVRANGE (Top-K has no merge);
  percentiles: a T-Digest per minute; a read is TDIGEST.MERGE of the last 60
               and the query.

Accuracy (`--accuracy`): one stream, Zipf-distributed items (50,000 of them,
s = 1.1) with latency-like values, then a burst (5 items take 40 % of the
events, values 20x slower), an idle gap longer than the window, and a
second steady phase whose popular items are others. Time is scaled (a
"minute" is 100 ms: a 6 s window of 60 buckets, the stream 25 s) and real:
the server's own clock moves the window. Every 250 ms each structure is
asked and compared with the exact answer over the last 6 s, computed by
this script from its send times. Today's way runs beside it on the same
stream, per "minute" keys: for counts and percentiles of the same shape (so
the same memory, 60 keys against 60 buckets); for top items, sorted sets
trimmed at each minute's end to the members that fit the windowed Top-K's
memory.

Speed (`--speed`): one-hour windows of 60 one-minute buckets, full (60
minutes of a Zipf stream, 10,000 events a minute, written as an AOF the
server loads: the AOF carries the minutes' clock ticks, the only way to
fill an hour without waiting one), against 60 per-minute keys holding the
same minutes. redis-benchmark drives each row (4 clients, pipelined);
today's reads are one EVAL (MERGE or ZUNIONSTORE, then the query: no
client round trips, so a lower bound of their cost) or 60 pipelined
queries. Ratios are medians over rounds of per-round ratios (windowed over
today's, > 1 means the window is faster). Also the memory of the keys.

Usage: bench/window.py [--accuracy] [--speed] [--rounds N] [--quick]
Environment: RSBLOOM_MODULE (default target/release/librsbloom.so),
REDIS_SERVER (default: the newest cached Redis 8.6, else redis-server),
REDIS_BENCHMARK, BENCH_SERVER_CPU / BENCH_CLIENT_CPU (as bench/bench.py).
"""

import argparse
import bisect
import collections
import glob
import heapq
import itertools
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the RESP client, servers, redis-benchmark)

ROOT = bench.ROOT
CACHE = os.environ.get("RSBLOOM_SERVER_CACHE", "/var/cache/rsbloom-servers")


def server_binary():
    env = os.environ.get("REDIS_SERVER")
    if env:
        return env
    hits = sorted(glob.glob(os.path.join(CACHE, "redis-8.6.*/bin/redis-server")))
    return hits[-1] if hits else "redis-server"


def module():
    return os.environ.get("RSBLOOM_MODULE", os.path.join(ROOT, "target/release/librsbloom.so"))


# ---------------------------------------------------------------------------
# The stream.

UNIVERSE = 50_000
ZIPF_S = 1.1


class Stream:
    """Items (Zipf over a permutation of the universe) and values
    (lognormal, ms) by phase; deterministic from the seed."""

    def __init__(self, seed=38):
        self.rng = random.Random(seed)
        weights = [1 / (r + 1) ** ZIPF_S for r in range(UNIVERSE)]
        self.cum = list(itertools.accumulate(weights))
        self.perm = {"a": list(range(UNIVERSE)), "b": list(range(UNIVERSE))}
        self.rng.shuffle(self.perm["a"])
        self.rng.shuffle(self.perm["b"])

    def events(self, phase, n):
        rng = self.rng
        if phase == "burst":
            out = []
            for _ in range(n):
                if rng.random() < 0.4:
                    out.append(("burst%d" % rng.randrange(5), rng.lognormvariate(6.0, 0.3)))
                else:
                    out.append(self._steady("a", rng))
            return out
        return [self._steady(phase, rng) for _ in range(n)]

    def _steady(self, phase, rng):
        rank = bisect.bisect_left(self.cum, rng.random() * self.cum[-1])
        mu, sigma = (3.0, 0.5) if phase == "a" else (3.2, 0.6)
        return ("i%d" % self.perm[phase][min(rank, UNIVERSE - 1)], rng.lognormvariate(mu, sigma))


# Accuracy timeline (seconds from the start, scaled: 1 s = 10 "minutes").
ACC_WINDOW_MS = 6000
ACC_PERIOD_MS = 100
PHASES = [(0.0, 9.0, "a"), (9.0, 10.0, "burst"), (10.0, 18.5, None), (18.5, 25.0, "b")]
RATE = 4000  # events per second
TICK_S = 0.02
QUERY_EVERY_S = 0.25
QUERY_FROM_S = 6.0


def phase_at(t):
    for start, end, phase in PHASES:
        if start <= t < end:
            return phase
    return None


class Exact:
    """The exact answers over the last window. Each batch is stamped with
    the server's time as it runs it (TIME first in its pipeline) and with
    the minute key this script wrote it to."""

    def __init__(self, window_ms):
        self.window_ms = window_ms
        self.events = collections.deque()
        self.counts = collections.Counter()
        self.values = []

    def add(self, t_ms, minute, batch):
        for item, value in batch:
            self.events.append((t_ms, minute, item, value))
            self.counts[item] += 1
            bisect.insort(self.values, value)

    def expire(self, now_ms):
        while self.events and self.events[0][0] <= now_ms - self.window_ms:
            self._drop(self.counts, self.values, self.events.popleft())

    @staticmethod
    def _drop(counts, values, event):
        _, _, item, value = event
        counts[item] -= 1
        if not counts[item]:
            del counts[item]
        del values[bisect.bisect_left(values, value)]

    def snapshot(self, start_ms=0, first_minute=0):
        """The events from `start_ms` (by the server's time) or from the
        minute key `first_minute` on, within the last window."""
        counts, values = self.counts.copy(), self.values
        edge = list(itertools.takewhile(
            lambda e: e[0] < start_ms or e[1] < first_minute, self.events))
        if edge:
            values = list(values)
            for e in edge:
                self._drop(counts, values, e)
        return Snapshot(counts, values)


class Snapshot:
    def __init__(self, counts, values):
        self.counts = counts
        self.values = values

    def total(self):
        return len(self.values)

    def top(self, k):
        """The true top k, ties with the k-th included."""
        best = heapq.nlargest(k, self.counts.items(), key=lambda kv: kv[1])
        if not best:
            return set()
        floor = best[-1][1]
        return {i for i, c in self.counts.items() if c >= floor}

    def rank(self, x):
        """Mid-rank of x among the window's values, as a fraction."""
        n = len(self.values)
        if not n:
            return None
        lo = bisect.bisect_left(self.values, x)
        hi = bisect.bisect_right(self.values, x)
        return (lo + hi) / 2 / n


def ask(c, query, info_cmd, key):
    """A windowed key's answer and where it starts: TIME, the query and the
    key's INFO in one pipeline (the same server time, to the ms), the start
    from the live buckets (docs/cms-window.md §3)."""
    c.sock.sendall(b"".join(bench.Conn.encode(*cmd) for cmd in (["TIME"], query, [info_cmd, key])))
    (sec, usec), answer, info = c.read(), c.read(), c.read()
    now_ms = int(sec) * 1000 + int(usec) // 1000
    f = dict(zip((k if isinstance(k, str) else k.decode() for k in info[::2]), info[1::2]))
    last, p, b = f["last_shift_ms"], f["bucket_ms"], f["buckets"]
    due = max(0, now_ms - last) // p
    return answer, last - (b - 1 - due) * p


def parse_floats(reply):
    return [float(v) for v in reply]


class Family:
    """One windowed family against today's per-minute keys."""

    name = ""
    probe = []  # a WINDOW creation the server must accept

    def supported(self, c):
        try:
            c.call(*self.probe)
        except RuntimeError:
            return False
        c.call("DEL", self.probe[1])
        return True


# -- Count-Min Sketch ----------------------------------------------------------

CMS_W, CMS_D = 2000, 5  # ε = 2/width = 0.1 % of the window's count, δ = 2^-5


class Cms(Family):
    name = "Count-Min Sketch"
    probe = ["CMS.INITBYDIM", "probe:cms", "10", "2", "WINDOW", "1000"]

    # accuracy ----------------------------------------------------------------
    def acc_create(self, c, window_ms):
        c.call("CMS.INITBYDIM", "acc:cms", CMS_W, CMS_D, "WINDOW", window_ms)
        c.call("CMS.INITBYDIM", "acc:cms:scratch", CMS_W, CMS_D)  # CMS.MERGE's destination
        self.errs = collections.defaultdict(list)

    def minute_key(self, n):
        return "acc:cms:%d" % n

    def acc_new_minute(self, c, n, existing):
        c.call("CMS.INITBYDIM", self.minute_key(n), CMS_W, CMS_D)

    def acc_feed(self, n, batch):
        pairs = [x for item, _ in batch for x in (item, 1)]
        return [["CMS.INCRBY", "acc:cms"] + pairs, ["CMS.INCRBY", self.minute_key(n)] + pairs]

    def acc_query(self, c, exact, minutes, rng):
        last = exact.snapshot()
        if not last.total():
            return
        items = list(last.top(20))[:20] + ["i%d" % rng.randrange(UNIVERSE) for _ in range(20)]
        win, start = ask(c, ["CMS.QUERY", "acc:cms"] + items, "CMS.INFO", "acc:cms")
        same_w = exact.snapshot(start)
        keys = [self.minute_key(m) for m in minutes]
        c.call("CMS.MERGE", "acc:cms:scratch", len(keys), *keys)
        today = c.call("CMS.QUERY", "acc:cms:scratch", *items)
        same_t = exact.snapshot(first_minute=minutes[0] if minutes else 0)
        for side, est, same in (("window", win, same_w), ("today", today, same_t)):
            for ref, snap in (("same", same), ("last", last)):
                n = max(1, snap.total())
                self.errs[side + ref].extend((e - snap.counts.get(i, 0)) / n for e, i in zip(est, items))

    def acc_rows(self):
        eps = 2 / CMS_W
        rows = []
        for side in ("window", "today"):
            same, last = self.errs[side + "same"], self.errs[side + "last"]
            rows.append([
                "windowed CMS" if side == "window" else "60 per-minute CMS + CMS.MERGE",
                "%d" % len(same),
                "%.4f %%" % (100 * statistics.mean(abs(x) for x in same)),
                "%.4f %%" % (100 * max(abs(x) for x in same)),
                "%.1f %%" % (100 * sum(1 for x in same if 0 <= x <= eps) / len(same)),
                "%.4f %%" % (100 * statistics.mean(abs(x) for x in last)),
                "%.4f %%" % (100 * max(abs(x) for x in last)),
            ])
        return (
            "Count-Min Sketch %dx%d (ε = %.1f %% of the window's count N, δ = 2^-%d): error of"
            " CMS.QUERY against the exact count, as a share of N, over the interval the answer covers"
            " (its buckets) and over exactly the last window (the edge included)"
            % (CMS_W, CMS_D, 100 * eps, CMS_D),
            ["structure", "answers", "covered: mean abs. error", "max abs. error", "within [0, ε·N]",
             "last window: mean abs. error", "max abs. error"],
            rows,
        )


# -- Top-K -------------------------------------------------------------------

TOPK_K, TOPK_W, TOPK_D, TOPK_DECAY = 10, 1000, 5, "0.9"


class Topk(Family):
    name = "Top-K"
    probe = ["TOPK.RESERVE", "probe:topk", "10", "WINDOW", "1000"]

    def __init__(self, width):
        self.width = width
        self.key = "acc:topk:%d" % width

    def acc_create(self, c, window_ms):
        c.call("TOPK.RESERVE", self.key, TOPK_K, self.width, TOPK_D, TOPK_DECAY, "WINDOW", window_ms)
        mem = c.call("MEMORY", "USAGE", self.key)
        # Today's memory per minute: a sorted set of typical members, per member.
        c.call("ZADD", "acc:z:cal", *[x for i in range(200) for x in (i, "i%d" % (i * 137))])
        per_member = c.call("MEMORY", "USAGE", "acc:z:cal") / 200
        c.call("DEL", "acc:z:cal")
        self.keep = max(1, int(mem / 60 / per_member))
        self.mem = mem
        self.scores = collections.defaultdict(list)
        self.stale = collections.Counter()
        self.empty = collections.Counter()

    def minute_key(self, n):
        return "acc:z%d:%d" % (self.width, n)

    def acc_new_minute(self, c, n, existing):
        # The minute that ended keeps only what fits the same memory.
        if n - 1 in existing:
            c.call("ZREMRANGEBYRANK", self.minute_key(n - 1), 0, -(self.keep + 1))

    def acc_feed(self, n, batch):
        counts = collections.Counter(item for item, _ in batch)
        return [["TOPK.ADD", self.key] + [item for item, _ in batch]] + [
            ["ZINCRBY", self.minute_key(n), cnt, item] for item, cnt in counts.items()
        ]

    def acc_query(self, c, exact, minutes, rng):
        win, start = ask(c, ["TOPK.LIST", self.key], "TOPK.INFO", self.key)
        win = [i.decode() for i in win]
        same_w = exact.snapshot(start)
        keys = [self.minute_key(m) for m in minutes]
        c.call("ZUNIONSTORE", "acc:z:scratch", len(keys), *keys)
        today = [i.decode() for i in c.call("ZREVRANGE", "acc:z:scratch", 0, TOPK_K - 1)]
        same_t = exact.snapshot(first_minute=minutes[0] if minutes else 0)
        last = exact.snapshot()
        for side, got, same in (("window", win, same_w), ("today", today, same_t)):
            for ref, snap in (("same", same), ("last", last)):
                truth = snap.top(TOPK_K)
                if not truth:
                    self.stale[side + ref] += bool(got)
                    self.empty[side + ref] += 1
                    continue
                hit = len(set(got) & truth)
                self.scores[side + ref].append(
                    (hit / len(got) if got else 0.0, hit / min(TOPK_K, len(truth))))

    def acc_rows(self):
        rows = []
        for side in ("window", "today"):
            same, last = self.scores[side + "same"], self.scores[side + "last"]
            rows.append([
                "windowed Top-K" if side == "window"
                else "60 per-minute sorted sets of %d members + ZUNIONSTORE" % self.keep,
                "%d" % len(same),
                "%.3f" % statistics.mean(p for p, _ in same),
                "%.3f" % statistics.mean(r for _, r in same),
                "%.3f" % min(r for _, r in same),
                "%.3f" % statistics.mean(p for p, _ in last),
                "%.3f" % statistics.mean(r for _, r in last),
                "%d of %d" % (self.stale[side + "last"], self.empty[side + "last"]),
            ])
        return (
            "Top-K k=%d (width %d, depth %d, decay %s; %d bytes): TOPK.LIST against the true top %d"
            " (ties with the %d-th count as top) of the interval the answer covers and of exactly"
            " the last window" % (TOPK_K, self.width, TOPK_D, TOPK_DECAY, self.mem, TOPK_K, TOPK_K),
            ["structure", "answers", "covered: precision", "recall", "worst recall",
             "last window: precision", "recall", "a list over an empty window"],
            rows,
        )


# -- T-Digest ----------------------------------------------------------------

TD_COMPRESSION = 100
QUANTILES = (0.5, 0.99, 0.999)


class Tdigest(Family):
    name = "T-Digest"
    probe = ["TDIGEST.CREATE", "probe:td", "WINDOW", "1000"]

    def acc_create(self, c, window_ms):
        c.call("TDIGEST.CREATE", "acc:td", "COMPRESSION", TD_COMPRESSION, "WINDOW", window_ms)
        self.errs = collections.defaultdict(lambda: {q: [] for q in QUANTILES})

    def minute_key(self, n):
        return "acc:td:%d" % n

    def acc_new_minute(self, c, n, existing):
        c.call("TDIGEST.CREATE", self.minute_key(n), "COMPRESSION", TD_COMPRESSION)

    def acc_feed(self, n, batch):
        values = ["%.6f" % v for _, v in batch]
        return [["TDIGEST.ADD", "acc:td"] + values, ["TDIGEST.ADD", self.minute_key(n)] + values]

    def acc_query(self, c, exact, minutes, rng):
        last = exact.snapshot()
        if not last.total():
            return
        win, start = ask(c, ["TDIGEST.QUANTILE", "acc:td"] + list(QUANTILES), "TDIGEST.INFO", "acc:td")
        win = parse_floats(win)
        same_w = exact.snapshot(start)
        keys = [self.minute_key(m) for m in minutes]
        c.call("TDIGEST.MERGE", "acc:td:scratch", len(keys), *keys, "OVERRIDE")
        today = parse_floats(c.call("TDIGEST.QUANTILE", "acc:td:scratch", *QUANTILES))
        same_t = exact.snapshot(first_minute=minutes[0] if minutes else 0)
        for side, est, same in (("window", win, same_w), ("today", today, same_t)):
            for ref, snap in (("same", same), ("last", last)):
                for q, x in zip(QUANTILES, est):
                    r = snap.rank(x)
                    if r is not None:
                        self.errs[side + ref][q].append(abs(r - q))

    def acc_rows(self):
        rows = []
        for side in ("window", "today"):
            same, last = self.errs[side + "same"], self.errs[side + "last"]
            rows.append(
                ["windowed T-Digest" if side == "window" else "60 per-minute T-Digests + TDIGEST.MERGE",
                 "%d" % len(same[QUANTILES[0]])]
                + ["%.3f / %.3f" % (100 * statistics.mean(same[q]), 100 * max(same[q])) for q in QUANTILES]
                + ["%.3f" % (100 * statistics.mean(last[q])) for q in QUANTILES]
            )
        return (
            "T-Digest, compression %d: rank error of TDIGEST.QUANTILE's answer x, |rank(x) − q| among"
            " the exact values of the interval the answer covers (mean / max) and of exactly the"
            " last window (mean), in percentage points" % TD_COMPRESSION,
            ["structure", "answers"] + ["covered p%g" % (100 * q) for q in QUANTILES]
            + ["last window p%g" % (100 * q) for q in QUANTILES],
            rows,
        )


# Top-K twice: a width that fits the stream's heavy items, and one ten
# times smaller (today's sorted sets then keep fewer members a minute).
FAMILIES = [Cms(), Topk(100), Topk(TOPK_W), Tdigest()]


def accuracy(c, fams):
    stream = Stream()
    exact = Exact(ACC_WINDOW_MS)
    rng = random.Random(7)
    for f in fams:
        f.acc_create(c, ACC_WINDOW_MS)
    existing = collections.deque()
    start = time.time()
    next_query = QUERY_FROM_S
    end = PHASES[-1][1]
    lag = 0.0
    while True:
        t = time.time() - start
        if t >= end:
            break
        now_ms = int(time.time() * 1000)
        minute = now_ms // ACC_PERIOD_MS
        if not existing or existing[-1] != minute:
            for f in fams:
                f.acc_new_minute(c, minute, set(existing))
            existing.append(minute)
            while existing[0] < minute - 70:
                old = existing.popleft()
                c.call("DEL", *[f.minute_key(old) for f in fams])
        phase = phase_at(t)
        if phase:
            batch = stream.events(phase, int(RATE * TICK_S))
            cmds = [cmd for f in fams for cmd in f.acc_feed(minute, batch)]
            exact.add(timed(c, cmds), minute, batch)
        if t >= next_query:
            sec, usec = c.call("TIME")
            q_ms = int(sec) * 1000 + int(usec) // 1000
            exact.expire(q_ms)
            minutes = [m for m in existing if m > q_ms // ACC_PERIOD_MS - 60]
            for f in fams:
                f.acc_query(c, exact, minutes, rng)
            next_query += QUERY_EVERY_S
        sleep = start + t + TICK_S - time.time()
        if sleep > 0:
            time.sleep(sleep)
        lag = max(lag, -sleep)
    print("Accuracy: window %d ms in %d buckets, stream %.0f s at %d events/s (phases %s); "
          "asked every %.0f ms from %.0f s; a batch at most %.0f ms late\n"
          % (ACC_WINDOW_MS, ACC_WINDOW_MS // ACC_PERIOD_MS, end, RATE,
             ", ".join("%s %g-%g s" % (p or "idle", a, b) for a, b, p in PHASES),
             1000 * QUERY_EVERY_S, QUERY_FROM_S, 1000 * lag))
    for f in fams:
        title, header, rows = f.acc_rows()
        table(title, header, rows)


def timed(c, cmds):
    """Runs `TIME` and `cmds` in one pipeline; the server's time (ms) as it
    ran them."""
    c.sock.sendall(bench.Conn.encode("TIME") + b"".join(bench.Conn.encode(*cmd) for cmd in cmds))
    sec, usec = c.read()
    for _ in cmds:
        r = c.read()
        if isinstance(r, RuntimeError):
            raise r
    return int(sec) * 1000 + int(usec) // 1000


def table(title, header, rows):
    print(title)
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()


# ---------------------------------------------------------------------------
# Speed: full one-hour windows from an AOF.

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
PER_MINUTE = 10_000
RAND = 60  # redis-benchmark's -r: __rand_int__ in 0..59, 12 digits


def rkey(prefix, n):
    """The per-minute key redis-benchmark names with -r 60."""
    return "%s%012d" % (prefix, n)


def aof(commands):
    return b"".join(bench.Conn.encode(*c) for c in commands)


def speed_setup(fams, quick):
    """The AOF of full windows and their per-minute twins. The windows'
    clock starts a day ahead: the server's clock stays behind their last
    shift, so no read or write during the run shifts them."""
    stream = Stream(seed=40)
    t0 = int(time.time() * 1000) + 86_400_000
    per_minute = PER_MINUTE // (10 if quick else 1)
    cmds = []
    names = {f.name for f in fams}
    if "Count-Min Sketch" in names:
        cmds.append(["CMS.INITBYDIM", "win:cms", CMS_W, CMS_D, "WINDOW", HOUR_MS])
        cmds.append(["CMS.INITBYDIM", "cms:scratch", CMS_W, CMS_D])
    if "Top-K" in names:
        cmds.append(["TOPK.RESERVE", "win:topk", TOPK_K, TOPK_W, TOPK_D, TOPK_DECAY, "WINDOW", HOUR_MS])
    if "T-Digest" in names:
        cmds.append(["TDIGEST.CREATE", "win:td", "COMPRESSION", TD_COMPRESSION, "WINDOW", HOUR_MS])
    ticks = {"Count-Min Sketch": ("CMS.TICK", "win:cms"), "Top-K": ("TOPK.TICK", "win:topk"),
             "T-Digest": ("TDIGEST.TICK", "win:td")}
    for m in range(60):
        for name in names:
            tick, key = ticks[name]
            cmds.append([tick, key, t0 + m * MINUTE_MS])
        if "Count-Min Sketch" in names:
            cmds.append(["CMS.INITBYDIM", rkey("cms:m:", m), CMS_W, CMS_D])
        if "T-Digest" in names:
            cmds.append(["TDIGEST.CREATE", rkey("td:m:", m), "COMPRESSION", TD_COMPRESSION])
        for _ in range(per_minute // 100):
            batch = stream.events("a", 100)
            items = [i for i, _ in batch]
            if "Count-Min Sketch" in names:
                pairs = [x for i in items for x in (i, 1)]
                cmds.append(["CMS.INCRBY", "win:cms"] + pairs)
                cmds.append(["CMS.INCRBY", rkey("cms:m:", m)] + pairs)
            if "Top-K" in names:
                cmds.append(["TOPK.ADD", "win:topk"] + items)
                for i, n in collections.Counter(items).items():
                    cmds.append(["ZINCRBY", rkey("z:m:", m), n, i])
            if "T-Digest" in names:
                values = ["%.6f" % v for _, v in batch]
                cmds.append(["TDIGEST.ADD", "win:td"] + values)
                cmds.append(["TDIGEST.ADD", rkey("td:m:", m)] + values)
    return aof(cmds)


def lua_keys(prefix):
    return [rkey(prefix, m) for m in range(60)]


MERGE_CMS = "redis.call('CMS.MERGE', KEYS[1], #KEYS - 1, unpack(KEYS, 2)) " \
            "return redis.call('CMS.QUERY', KEYS[1], unpack(ARGV))"
UNION_LIST = "redis.call('ZUNIONSTORE', KEYS[1], #KEYS - 1, unpack(KEYS, 2)) " \
             "return redis.call('ZREVRANGE', KEYS[1], 0, 9, 'WITHSCORES')"
UNION_SCORES = "redis.call('ZUNIONSTORE', KEYS[1], #KEYS - 1, unpack(KEYS, 2)) " \
               "return redis.call('ZMSCORE', KEYS[1], unpack(ARGV))"
MERGE_TD = "redis.call('TDIGEST.MERGE', KEYS[1], #KEYS - 1, unpack(KEYS, 2)) " \
           "return redis.call('%s', KEYS[1], unpack(ARGV))"


def evalcmd(script, scratch, prefix, args):
    return ["EVAL", script, "61", scratch] + lua_keys(prefix) + list(args)


def items(n):
    return ["i__rand_int__"] * n


def rows_of(fams):
    """(family, row name, per-question weight, windowed command, [(today's
    label, command, requests per question)]). Weight converts requests to
    items (×100 rows)."""
    cur = 59
    out = []
    names = {f.name for f in fams}
    if "Count-Min Sketch" in names:
        pairs = lambda n: [x for i in items(n) for x in (i, "1")]
        for n in (1, 100):
            out.append(("Count-Min Sketch", "CMS.INCRBY ×%d" % n, n, ["CMS.INCRBY", "win:cms"] + pairs(n),
                        [("the minute's key", ["CMS.INCRBY", rkey("cms:m:", cur)] + pairs(n), 1)]))
        for n in (1, 100):
            out.append(("Count-Min Sketch", "CMS.QUERY ×%d" % n, n, ["CMS.QUERY", "win:cms"] + items(n),
                        [("MERGE of 60 + QUERY (EVAL)", evalcmd(MERGE_CMS, "cms:scratch", "cms:m:", items(n)), 1),
                         ("60 pipelined QUERY", ["CMS.QUERY", "cms:m:__rand_int__"] + items(n), 60)]))
    if "Top-K" in names:
        for n in (1, 100):
            out.append(("Top-K", "TOPK.ADD ×%d" % n, n, ["TOPK.ADD", "win:topk"] + items(n),
                        [("ZINCRBY on the minute's set", ["ZINCRBY", rkey("z:m:", cur), "1", "i__rand_int__"], n)]))
        out.append(("Top-K", "TOPK.LIST WITHCOUNT", 1, ["TOPK.LIST", "win:topk", "WITHCOUNT"],
                    [("ZUNIONSTORE of 60 + ZREVRANGE (EVAL)", evalcmd(UNION_LIST, "z:scratch", "z:m:", []), 1)]))
        out.append(("Top-K", "TOPK.COUNT ×100", 100, ["TOPK.COUNT", "win:topk"] + items(100),
                    [("ZUNIONSTORE of 60 + ZMSCORE (EVAL)", evalcmd(UNION_SCORES, "z:scratch", "z:m:", items(100)), 1)]))
    if "T-Digest" in names:
        for n in (1, 100):
            values = ["__rand_int__"] * n
            out.append(("T-Digest", "TDIGEST.ADD ×%d" % n, n, ["TDIGEST.ADD", "win:td"] + values,
                        [("the minute's digest", ["TDIGEST.ADD", rkey("td:m:", cur)] + values, 1)]))
        out.append(("T-Digest", "TDIGEST.QUANTILE p99", 1, ["TDIGEST.QUANTILE", "win:td", "0.99"],
                    [("MERGE of 60 + QUANTILE (EVAL)",
                      evalcmd(MERGE_TD % "TDIGEST.QUANTILE", "td:scratch", "td:m:", ["0.99"]), 1)]))
        cdf = ["%d" % (10 + i) for i in range(100)]
        out.append(("T-Digest", "TDIGEST.CDF ×100", 100, ["TDIGEST.CDF", "win:td"] + cdf,
                    [("MERGE of 60 + CDF (EVAL)", evalcmd(MERGE_TD % "TDIGEST.CDF", "td:scratch", "td:m:", cdf), 1)]))
    return out


def rate(s, cmd, n, pipeline):
    try:
        return bench.redis_benchmark(s.port, n, pipeline, RAND, [str(a) for a in cmd])
    except bench.subprocess.CalledProcessError as e:
        sys.exit("%s: %s%s" % (cmd[0], e.stdout, e.stderr))


def command_usec(s, name):
    """INFO commandstats' usec_per_call of `name` since the last RESETSTAT:
    the time inside the command, without the network, the parsing and the
    reply's write, which move with the host's noise."""
    text = s.conn.call("INFO", "commandstats").decode()
    for line in text.splitlines():
        if line.startswith("cmdstat_%s:" % name.lower()):
            fields = dict(kv.split("=") for kv in line.split(":", 1)[1].split(","))
            return float(fields["usec_per_call"])
    return float("nan")


def is_add(name):
    return name.split()[0].endswith(("ADD", "INCRBY"))


def speed(s, fams, rounds, quick):
    rows = rows_of(fams)
    results = collections.defaultdict(list)
    usec = collections.defaultdict(list)
    for r in range(rounds):
        for fam, name, weight, win, todays in rows:
            heavy = any(c[0] == "EVAL" for _, c, _ in todays)
            n = (2_000 if quick else 20_000) if weight == 100 else (20_000 if quick else 200_000)
            sides = [("window", win, 1)] + list(todays)
            if r % 2:
                sides.reverse()
            for label, cmd, per_q in sides:
                if heavy and cmd[0] == "EVAL":
                    k, pipe = max(50, n // 2000), 1
                else:
                    k, pipe = n, (60 if per_q == 60 else 16 if weight == 1 else 4)
                s.conn.call("CONFIG", "RESETSTAT")
                results[(name, label)].append(weight * rate(s, cmd, k, pipe) / per_q)
                if is_add(name):
                    usec[(name, label)].append(command_usec(s, cmd[0]) / weight * per_q)
    mem = memory(s, fams)
    print("Speed: one-hour windows of 60 one-minute buckets, %d events a minute; %s with rsbloom %s; "
          "%d rounds; items (or questions) per second, medians; ratio = windowed / today's, median of "
          "per-round ratios\n" % (PER_MINUTE // (10 if quick else 1), s.version(), rsbloom_version(s), rounds))
    print("| family | operation | windowed key | today's way | today's | ratio |")
    print("|---|---|---:|---|---:|---:|")
    for fam, name, weight, win, todays in rows:
        w = results[(name, "window")]
        for label, _, _ in todays:
            t = results[(name, label)]
            ratio = statistics.median(a / b for a, b in zip(w, t))
            print("| %s | %s | {:,.0f} | %s | {:,.0f} | **%.2f×** |".format(statistics.median(w), statistics.median(t))
                  % (fam, name, label, ratio))
    print("\nThe adds, where the margin is thin: time inside the command per item (INFO commandstats "
          "usec_per_call, medians; ratio = today's / windowed, median of per-round ratios), and the "
          "per-round ratios of both measures:\n")
    print("| operation | today's way | windowed µs/item | today's µs/item | ratio |")
    print("|---|---|---:|---:|---:|")
    lines = []
    for fam, name, weight, win, todays in rows:
        if not is_add(name):
            continue
        w, wu = results[(name, "window")], usec[(name, "window")]
        for label, _, _ in todays:
            t, tu = results[(name, label)], usec[(name, label)]
            print("| %s | %s | %.3f | %.3f | **%.2f×** |" % (
                name, label, statistics.median(wu), statistics.median(tu),
                statistics.median(b / a for a, b in zip(wu, tu))))
            lines.append("* %s, %s: rate %s; command time %s" % (
                name, label, " ".join("%.2f" % (a / b) for a, b in zip(w, t)),
                " ".join("%.2f" % (b / a) for a, b in zip(wu, tu))))
    print()
    print("\n".join(lines))
    print()
    print("Memory of one-hour windows (MEMORY USAGE; the windows full, the per-minute keys as filled):\n")
    print("| shape | windowed key | 60 per-minute keys | ratio |")
    print("|---|---:|---:|---:|")
    for shape, w, t in mem:
        print("| %s | {:,} B | %s | %s |".format(w) % (
            shape, "{:,} B".format(t) if t else "—", "%.2f×" % (w / t) if t else "—"))
    print()


def rsbloom_version(s):
    for m in s.conn.call("MODULE", "LIST"):
        d = dict(zip(m[::2], m[1::2]))
        if d.get(b"name") == b"bf":
            return "module version %d" % d[b"ver"]
    return ""


def memory(s, fams):
    c = s.conn
    names = {f.name for f in fams}
    usage = lambda k: c.call("MEMORY", "USAGE", k) or 0
    out = []
    if "Count-Min Sketch" in names:
        out.append(("CMS %dx%d, filled" % (CMS_W, CMS_D), usage("win:cms"),
                    sum(usage(k) for k in lua_keys("cms:m:"))))
    if "Top-K" in names:
        out.append(("Top-K k=%d %dx%d, filled (today: sorted sets, untrimmed)" % (TOPK_K, TOPK_W, TOPK_D),
                    usage("win:topk"), sum(usage(k) for k in lua_keys("z:m:"))))
    if "T-Digest" in names:
        out.append(("T-Digest compression %d, filled" % TD_COMPRESSION, usage("win:td"),
                    sum(usage(k) for k in lua_keys("td:m:"))))
    shapes = []
    if "Count-Min Sketch" in names:
        shapes += [("CMS.INITBYPROB 0.001 0.01 (2000x7)", ["CMS.INITBYPROB", "{k}", "0.001", "0.01"]),
                   ("CMS.INITBYPROB 0.01 0.01 (200x7)", ["CMS.INITBYPROB", "{k}", "0.01", "0.01"])]
    if "Top-K" in names:
        shapes += [("TOPK.RESERVE 10 (8x7)", ["TOPK.RESERVE", "{k}", "10"]),
                   ("TOPK.RESERVE 100 2000 7 0.925", ["TOPK.RESERVE", "{k}", "100", "2000", "7", "0.925"])]
    if "T-Digest" in names:
        shapes += [("TDIGEST.CREATE (compression 100), empty", ["TDIGEST.CREATE", "{k}"])]
    for shape, cmd in shapes:
        c.call(*[a.replace("{k}", "mem:w") for a in cmd], "WINDOW", HOUR_MS)
        c.call(*[a.replace("{k}", "mem:p") for a in cmd])
        out.append(("%s, created" % shape, usage("mem:w"), 60 * usage("mem:p")))
        c.call("DEL", "mem:w", "mem:p")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--accuracy", action="store_true")
    ap.add_argument("--speed", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="smaller runs (smoke test)")
    args = ap.parse_args()
    if not (args.accuracy or args.speed):
        args.accuracy = args.speed = True
    workdir = tempfile.mkdtemp(prefix="rsbloom-bench-window-")
    binary = server_binary()
    try:
        probe = bench.Server("probe", module(), workdir, binary=binary)
        probe.start()
        try:
            fams = [f for f in FAMILIES if f.supported(probe.conn)]
            missing = sorted({f.name for f in FAMILIES if f not in fams})
            if missing:
                print("(no WINDOW on this module for: %s)\n" % ", ".join(missing))
            if args.accuracy:
                accuracy(probe.conn, fams)
        finally:
            probe.stop()
        if args.speed:
            s = bench.Server("speed", module(), workdir, binary=binary,
                             args=["--appendonly", "yes", "--appendfilename", "appendonly.aof",
                                   "--appenddirname", "aof"])
            with open(os.path.join(s.dir, "appendonly.aof"), "wb") as f:
                f.write(speed_setup(fams, args.quick))
            t0 = time.perf_counter()
            s.start()
            try:
                print("(loaded the AOF in %.1f s)\n" % (time.perf_counter() - t0))
                speed(s, fams, args.rounds, args.quick)
            finally:
                s.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
