"""rsbloom from Python: redis-py's Bloom (`r.bf()`) and Cuckoo (`r.cf()`)
commands. Run: pip install redis==8.1.0 && python3 bloom.py [PORT]"""
import sys

import redis

port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
r = redis.Redis(host="127.0.0.1", port=port)
r.delete("bf", "bf-copy", "cf", "cf-copy")

# Bloom filter: 1000 items at 0.1 % false positives.
bf = r.bf()
bf.reserve("bf", 0.001, 1000)
assert bf.add("bf", "apple") == 1
assert bf.madd("bf", "banana", "cherry") == [1, 1]
assert bf.exists("bf", "apple") == 1
assert bf.mexists("bf", "banana", "durian") == [1, 0]
info = bf.info("bf")
print("BF.INFO bf: capacity", info.capacity, "size", info.size, "items", info.insertedNum)
assert info.insertedNum == 3

# Cuckoo filter: items can be counted and deleted.
cf = r.cf()
cf.reserve("cf", 1000)
assert cf.add("cf", "apple") == 1
assert cf.addnx("cf", "apple") == 0
assert cf.insert("cf", ["banana", "cherry"]) == [1, 1]
assert cf.exists("cf", "banana") == 1
assert cf.count("cf", "apple") == 1
assert cf.delete("cf", "banana") == 1
assert cf.mexists("cf", "banana", "cherry") == [0, 1]
info = cf.info("cf")
print("CF.INFO cf: buckets", info.bucketNum, "items", info.insertedNum, "deleted", info.deletedNum)

# SCANDUMP / LOADCHUNK: copy each filter chunk by chunk (e.g. to another
# server). Chunks are bytes; iterator 0 ends the dump.
for family, src, dst in ((bf, "bf", "bf-copy"), (cf, "cf", "cf-copy")):
    iterator, chunks = 0, 0
    while True:
        iterator, data = family.scandump(src, iterator)
        if iterator == 0:
            break
        family.loadchunk(dst, iterator, data)
        chunks += 1
    print(f"SCANDUMP {src} -> LOADCHUNK {dst}: {chunks} chunks")
assert bf.mexists("bf-copy", "apple", "banana", "cherry", "durian") == [1, 1, 1, 0]
assert cf.mexists("cf-copy", "apple", "banana", "cherry") == [1, 0, 1]
assert bf.info("bf-copy").size == bf.info("bf").size

print("redis-py example: ok")
