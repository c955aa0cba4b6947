#!/usr/bin/env python3
"""Instructions per add, windowed key against a plain one (issue 38): the
noise-free side of bench/window.py's add rows, whose per-round ratios this
host's noise moves by 10-30 %.

Each row runs a fresh server under callgrind (valgrind), creates the key,
warms it with 200 commands, zeroes the counters, sends N commands (N/10 for
100-item batches), pipelined 50 at a time, and dumps: instructions of the
whole server per command (parsing, the command, the reply).

Usage: bench/window_instructions.py [N]   (default 3000; about 2 minutes)
Environment: RSBLOOM_MODULE (default target/release/librsbloom.so),
REDIS_SERVER (default: the newest cached Redis 8.6).
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import ROOT, Conn, free_port  # noqa: E402
from scale import newest_redis86  # noqa: E402

HOUR = ["WINDOW", "3600000"]
PAIRS = [x for i in range(100) for x in ("i%%d_%d" % i, "1")]
ROWS = [
    ("CMS.INCRBY ×1", ["CMS.INITBYDIM", "k", "2000", "5"], ["CMS.INCRBY", "k", "i%d", "1"]),
    ("CMS.INCRBY ×100", ["CMS.INITBYDIM", "k", "2000", "5"], ["CMS.INCRBY", "k"] + PAIRS),
    ("TDIGEST.ADD ×1", ["TDIGEST.CREATE", "k"], ["TDIGEST.ADD", "k", "%d"]),
    ("TDIGEST.ADD ×100", ["TDIGEST.CREATE", "k"], ["TDIGEST.ADD", "k"] + ["%d"] * 100),
    ("TOPK.ADD ×1", ["TOPK.RESERVE", "k", "10", "1000", "5", "0.9"], ["TOPK.ADD", "k", "i%d"]),
    ("TOPK.ADD ×100", ["TOPK.RESERVE", "k", "10", "1000", "5", "0.9"], ["TOPK.ADD", "k"] + ["i%%d_%d" % i for i in range(100)]),
]


def instructions(module, binary, create, cmd, n):
    """Instructions of the whole server per command."""
    part = profile(module, binary, create, cmd, n)
    try:
        for line in open(part):
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1]) / n
        sys.exit("no totals in " + part)
    finally:
        shutil.rmtree(os.path.dirname(part), ignore_errors=True)


def profile(module, binary, create, cmd, n, setup=None, valgrind_args=()):
    """The callgrind profile (its file) of `n` commands `cmd` (`%d`: the
    command's number) on a fresh server with `module`, after `create`,
    `setup(conn)` if given, and 200 warming commands; `valgrind_args` go to
    callgrind (e.g. its cache simulation)."""
    work = tempfile.mkdtemp(prefix="cg-")
    out = os.path.join(work, "callgrind.out")
    port = free_port()
    server = subprocess.Popen(["valgrind", "--tool=callgrind", *valgrind_args,
                               "--callgrind-out-file=" + out, binary,
                               "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                               "--dir", work, "--loadmodule", module],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while True:
        try:
            c = Conn(port)
            c.call("PING")
            break
        except (OSError, RuntimeError):
            if time.time() > deadline:
                sys.exit("the server under valgrind did not start")
            time.sleep(0.1)
    c.call(*create)
    if setup:
        setup(c)
    fill = lambda i: [a.replace("%d", str(i)) for a in cmd]  # noqa: E731
    for i in range(200):
        c.call(*fill(i))
    control = lambda what: subprocess.run(["callgrind_control", what, str(server.pid)],  # noqa: E731
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    control("-z")
    for start in range(0, n, 50):
        batch = range(start, min(n, start + 50))
        for i in batch:
            c.sock.sendall(Conn.encode(*fill(1000 + i)))
        for _ in batch:
            c.read()
    control("-d")
    c.sock.sendall(Conn.encode("SHUTDOWN", "NOSAVE"))
    server.wait(60)
    # The dump after the zeroing is the newest part file.
    return max(glob.glob(out + ".*"), key=os.path.getmtime)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    module = os.environ.get("RSBLOOM_MODULE", os.path.join(ROOT, "target/release/librsbloom.so"))
    binary = newest_redis86()
    print("Instructions per command under callgrind (whole server), %s; plain key against a "
          "one-hour window of 60 buckets\n" % os.path.basename(binary.rsplit("/bin/", 1)[0]))
    print("| command | plain key | windowed key | windowed / plain |")
    print("|---|---:|---:|---:|")
    for name, create, cmd in ROWS:
        k = n // 10 if "×100" in name else n
        plain = instructions(module, binary, create, cmd, k)
        windowed = instructions(module, binary, create + HOUR, cmd, k)
        print("| %s | {:,.0f} | {:,.0f} | %.3f |".format(plain, windowed) % (name, windowed / plain), flush=True)


if __name__ == "__main__":
    main()
