"""redis-py's Bloom (r.bf()) and Cuckoo (r.cf()) APIs against a server on
127.0.0.1:PORT.

Usage: redis_py.py PORT PROTOCOL MODULE [LEGACY]
  PROTOCOL  2 or 3 (redis.Redis(protocol=...))
  MODULE    rsbloom | reference: which module the server loaded; selects the
            expectations that differ between RedisBloom 8.x and 2.8.2
  LEGACY    1 (default) or 0: redis-py's legacy_responses flag

Checks its expectations itself (exit status 1 and a message on stderr on the
first failure) and prints a transcript, one `label<TAB>value` line per call,
so the caller can compare runs against different modules. Labels starting
with `module:` carry values that legitimately differ between the modules.
"""

import hashlib
import sys

import redis
from redis.commands.bf.info import BFInfo, CFInfo

port, protocol, module = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
legacy = len(sys.argv) < 5 or sys.argv[4] == "1"
assert module in ("rsbloom", "reference"), module

r = redis.Redis(
    host="127.0.0.1", port=port, protocol=protocol, legacy_responses=legacy
)
r.flushall()
bf, cf = r.bf(), r.cf()
transcript = []


def norm(v):
    """A stable text form that keeps the Python type visible."""
    if isinstance(v, (BFInfo, CFInfo)):
        return type(v).__name__ + norm(dict(sorted(vars(v).items())))
    if isinstance(v, bytes):
        return repr(v) if len(v) <= 64 else "sha256:" + hashlib.sha256(v).hexdigest()
    if isinstance(v, dict):
        return "{" + ", ".join(f"{norm(k)}: {norm(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(norm(x) for x in v) + "]"
    return f"{type(v).__name__}:{v!r}"


def rec(label, value):
    transcript.append(f"{label}\t{norm(value)}")
    return value


def check(cond, what):
    if not cond:
        sys.stderr.write("\n".join(transcript) + f"\nFAILED: {what}\n")
        sys.exit(1)


def error_of(f):
    try:
        f()
    except redis.ResponseError as e:
        return str(e)
    check(False, f"expected an error from {f}")


def field(info, attr, name):
    """A BF/CF INFO field, whether redis-py parsed it into an object
    (RESP2, or RESP3 without legacy responses) or left the RESP3 map."""
    if isinstance(info, dict):
        return info[name.encode()]
    return getattr(info, attr)


def as_int(v):
    """Booleans (RESP3 replies of 8.x) and integers alike."""
    return int(v)


# ---- module identity: redis-py compares the version numerically.
mods = {m[b"name"]: m[b"ver"] for m in r.module_list()}
rec("module:version", mods.get(b"bf"))
check(mods.get(b"bf") == {"rsbloom": 81181, "reference": 20802}[module], mods)

# ---- Bloom
check(rec("bf.create", bf.create("bf1", 0.01, 1000)) is True, "bf.create")
check(bf.reserve("bf2", 0.001, 100, expansion=4) is True, "reserve expansion")
check(bf.create("bf3", 0.01, 50, noScale=True) is True, "reserve noScale")
rec("bf.add new", bf.add("bf1", "a"))
check(as_int(rec("bf.add again", bf.add("bf1", "a"))) == 0, "bf.add dup")
check(
    [as_int(x) for x in rec("bf.madd", bf.madd("bf1", "a", "b", "c"))] == [0, 1, 1],
    "bf.madd",
)
rec(
    "bf.insert options",
    bf.insert("bf4", ["x", "y", "z"], capacity=200, error=0.02, expansion=3),
)
rec("bf.insert nocreate", bf.insert("bf1", ["d"], noCreate=True))
rec("bf.insert noScale", bf.insert("bf5", ["x"], capacity=10, noScale=True))
rec("bf.insert nocreate missing", error_of(lambda: bf.insert("nope", ["x"], noCreate=True)))
check(as_int(rec("bf.exists", bf.exists("bf1", "b"))) == 1, "bf.exists")
check(as_int(rec("bf.exists absent", bf.exists("bf1", "zz"))) == 0, "absent")
check(
    [as_int(x) for x in rec("bf.mexists", bf.mexists("bf1", "a", "zz", "d"))] == [1, 0, 1],
    "bf.mexists",
)
check(rec("bf.card", bf.card("bf1")) == 4, "bf.card")
check(rec("bf.card missing", bf.card("nope")) == 0, "bf.card missing")
for key, capacity, filters, items, expansion in [
    ("bf1", 1000, 1, 4, 2),
    ("bf2", 100, 1, 0, 4),
    ("bf3", 50, 1, 0, None),
    ("bf4", 200, 1, 3, 3),
]:
    info = rec(f"bf.info {key}", bf.info(key))
    if protocol == 2 or not legacy:
        check(isinstance(info, BFInfo), f"bf.info parsed: {info!r}")
    check(field(info, "capacity", "Capacity") == capacity, f"{key} capacity")
    check(field(info, "filterNum", "Number of filters") == filters, f"{key} filters")
    check(field(info, "insertedNum", "Number of items inserted") == items, f"{key} items")
    check(field(info, "expansionRate", "Expansion rate") == expansion, f"{key} expansion")
    check(field(info, "size", "Size") > 0, f"{key} size")
rec("bf.info missing", error_of(lambda: bf.info("nope")))

# Scaling filter, then SCANDUMP / LOADCHUNK round trip through redis-py.
bf.create("big", 0.01, 100)
words = [f"w{i}" for i in range(3000)]
for i in range(0, len(words), 500):
    bf.madd("big", *words[i : i + 500])
big_info = rec("bf.info big", bf.info("big"))
check(field(big_info, "filterNum", "Number of filters") >= 4, "big scaled")
chunks, it = [], 0
while True:
    it, data = bf.scandump("big", it)
    if it == 0:
        break
    chunks.append((it, data))
rec("bf.scandump chunks", chunks)
check(len(chunks) >= 5, f"bf scandump chunks: {len(chunks)}")
for it, data in chunks:
    check(bf.loadchunk("big-copy", it, data) in (True, b"OK", "OK"), "bf.loadchunk")
check(norm(bf.info("big-copy")) == norm(big_info), "copy info")
check(all(as_int(x) == 1 for x in bf.mexists("big-copy", *words)), "copy keeps items")
check(r.dump("big-copy") == r.dump("big"), "copy is byte-identical")
rec("bf.card big", bf.card("big-copy"))
rec("type", r.type("big-copy"))

# Version-specific error texts (docs/differences.md §3).
rec(
    "module:bf.create bad error rate",
    error_of(lambda: bf.create("bad", 1.5, 100)),
)
check(
    error_of(lambda: bf.create("bad", 1.5, 100))
    == {
        "rsbloom": "error rate must be in the range (0.000000, 1.000000)",
        "reference": "(0 < error rate range < 1) ",
    }[module],
    "error rate error text",
)

# ---- Cuckoo
check(rec("cf.create", cf.create("cf1", 1000)) is True, "cf.create")
check(
    cf.reserve("cf2", 100, expansion=2, bucket_size=4, max_iterations=30) is True,
    "cf.reserve options",
)
check(as_int(rec("cf.add", cf.add("cf1", "a"))) == 1, "cf.add")
check(as_int(rec("cf.add dup", cf.add("cf1", "a"))) == 1, "cf.add dup")
check(as_int(rec("cf.addnx dup", cf.addnx("cf1", "a"))) == 0, "cf.addnx")
check(as_int(rec("cf.addnx new", cf.addnx("cf1", "b"))) == 1, "cf.addnx")
rec("cf.insert", cf.insert("cf1", ["c", "d", "a"]))
rec("cf.insert capacity", cf.insert("cf3", ["x", "y"], capacity=500))
rec("cf.insertnx", cf.insertnx("cf1", ["c", "e"]))
rec("cf.insert nocreate missing", error_of(lambda: cf.insert("nope", ["x"], nocreate=True)))
check(as_int(rec("cf.exists", cf.exists("cf1", "e"))) == 1, "cf.exists")
check(
    [as_int(x) for x in rec("cf.mexists", cf.mexists("cf1", "a", "zz", "d"))] == [1, 0, 1],
    "cf.mexists",
)
check(rec("cf.count a", cf.count("cf1", "a")) == 3, "cf.count")
check(as_int(rec("cf.delete", cf.delete("cf1", "a"))) == 1, "cf.delete")
check(rec("cf.count after delete", cf.count("cf1", "a")) == 2, "cf.count")
info = cf.info("cf1")
check(field(info, "deletedNum", "Number of items deleted") == 1, "deleted before compact")
check(field(info, "insertedNum", "Number of items inserted") == 6, "inserted after delete")
check(as_int(rec("cf.delete absent", cf.delete("cf1", "zz"))) == 0, "cf.delete absent")
rec("cf.compact", r.execute_command("CF.COMPACT", "cf1"))
for key, buckets, bucket_size, inserted, deleted, expansion, max_iter in [
    # CF.COMPACT clears the deletion count.
    ("cf1", 512, 2, 6, 0, 1, 20),
    ("cf2", 32, 4, 0, 0, 2, 30),
]:
    info = rec(f"cf.info {key}", cf.info(key))
    if protocol == 2 or not legacy:
        check(isinstance(info, CFInfo), f"cf.info parsed: {info!r}")
    check(field(info, "bucketNum", "Number of buckets") == buckets, f"{key} buckets")
    check(field(info, "bucketSize", "Bucket size") == bucket_size, f"{key} bucket size")
    check(field(info, "insertedNum", "Number of items inserted") == inserted, f"{key} inserted")
    check(field(info, "deletedNum", "Number of items deleted") == deleted, f"{key} deleted")
    check(field(info, "expansionRate", "Expansion rate") == expansion, f"{key} expansion")
    check(field(info, "maxIteration", "Max iterations") == max_iter, f"{key} max iter")
    check(field(info, "filterNum", "Number of filters") == 1, f"{key} filters")
    check(field(info, "size", "Size") > 0, f"{key} size")

# Growing filter with deletions and compaction, SCANDUMP / LOADCHUNK round trip.
cf.reserve("cbig", 200, bucket_size=2, expansion=2)
for i in range(0, 2000, 250):
    cf.insert("cbig", [f"w{j}" for j in range(i, i + 250)])
for j in range(0, 2000, 7):
    cf.delete("cbig", f"w{j}")
r.execute_command("CF.COMPACT", "cbig")
cbig_info = rec("cf.info cbig", cf.info("cbig"))
check(field(cbig_info, "filterNum", "Number of filters") > 1, "cbig grew")
chunks, it = [], 0
while True:
    it, data = cf.scandump("cbig", it)
    if it == 0:
        break
    chunks.append((it, data))
rec("cf.scandump chunks", chunks)
check(len(chunks) >= 2, f"cf scandump chunks: {len(chunks)}")
for it, data in chunks:
    check(cf.loadchunk("cbig-copy", it, data) in (True, b"OK", "OK"), "cf.loadchunk")
check(norm(cf.info("cbig-copy")) == norm(cbig_info), "cf copy info")
check(r.dump("cbig-copy") == r.dump("cbig"), "cf copy is byte-identical")
kept = [f"w{j}" for j in range(2000) if j % 7]
check(all(as_int(x) == 1 for x in cf.mexists("cbig-copy", *kept)), "cf copy keeps items")
rec("cf.count copy", [cf.count("cbig-copy", f"w{j}") for j in range(20)])
rec("type cf", r.type("cbig-copy"))
rec("cf.info wrongtype", error_of(lambda: cf.info("big")))

print("\n".join(transcript))
