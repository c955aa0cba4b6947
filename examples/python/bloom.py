"""rsbloom from Python: redis-py's Bloom (`r.bf()`), Cuckoo (`r.cf()`),
Count-Min Sketch (`r.cms()`), Top-K (`r.topk()`) and T-Digest (`r.tdigest()`)
commands, one small real use each.
Run: pip install redis==8.1.0 && python3 bloom.py [PORT]"""
import sys

import redis

port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
r = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)
r.delete("crawled", "crawled-copy", "online", "online-copy", "hits", "top-products", "latency")

# Bloom filter: de-duplicate. A crawler visits each URL once: 0 means
# certainly new, 1 already seen (or, 0.1 % of the time, a false positive).
bf = r.bf()
bf.reserve("crawled", 0.001, 1000)
for url in ["https://example.com/", "https://example.com/a", "https://example.com/"]:
    if bf.add("crawled", url):
        print("crawl", url)
    else:
        print("skip", url, "(seen)")
assert bf.mexists("crawled", "https://example.com/a", "https://example.com/b") == [1, 0]
info = bf.info("crawled")
print("BF.INFO crawled: capacity", info.capacity, "size", info.size, "items", info.insertedNum)
assert info.insertedNum == 2

# Cuckoo filter: membership you can delete from. Who is online: log in
# adds, log out deletes.
cf = r.cf()
cf.reserve("online", 1000)
assert cf.add("online", "alice") == 1
assert cf.addnx("online", "alice") == 0
assert cf.insert("online", ["bob", "carol"]) == [1, 1]
assert cf.delete("online", "bob") == 1  # bob logs out
assert cf.mexists("online", "alice", "bob", "carol") == [1, 0, 1]
info = cf.info("online")
print("CF.INFO online: buckets", info.bucketNum, "items", info.insertedNum, "deleted", info.deletedNum)

# Count-Min Sketch: frequencies in fixed memory. Requests per client IP;
# a count is never under the truth.
cms = r.cms()
cms.initbyprob("hits", 0.001, 0.01)
for ip in ["10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.1"]:
    cms.incrby("hits", [ip], [1])
assert cms.query("hits", "10.0.0.1", "10.0.0.2", "10.0.0.3") == [3, 1, 0]
info = cms.info("hits")
print("CMS.INFO hits: width", info.width, "depth", info.depth, "count", info.count)

# Top-K: heavy hitters. The 3 most viewed products of a stream of views;
# TOPK.ADD answers the item each view pushed out of the top 3, if any.
topk = r.topk()
topk.reserve("top-products", 3, 50, 4, 0.9)
expelled = topk.add("top-products", "shoes", "hat", "shoes", "socks", "shoes", "hat", "scarf")
print("TOPK.ADD pushed out:", [e for e in expelled if e])
topk.incrby("top-products", ["socks", "belt"], [4, 1])
top = topk.list("top-products", withcount=True)
print("top 3:", top)
assert top == ["socks", 5, "shoes", 3, "hat", 2]
assert topk.query("top-products", "shoes", "scarf") == [1, 0]

# T-Digest: percentiles of a stream. Request latencies in milliseconds, two
# of 16 slow: median, 90th and 99th percentile, and the share under 20 ms.
td = r.tdigest()
td.create("latency")
td.add("latency", [12, 15, 11, 14, 13, 12, 16, 11, 13, 250, 12, 14, 13, 15, 90, 12])
p50, p90, p99 = td.quantile("latency", 0.5, 0.9, 0.99)
print(f"latency p50 {p50} ms, p90 {p90} ms, p99 {p99} ms")
assert (p50, p90, p99) == (13.0, 90.0, 250.0)
assert td.cdf("latency", 20) == [0.875]
assert (td.min("latency"), td.max("latency")) == (11.0, 250.0)

# SCANDUMP / LOADCHUNK: copy each filter chunk by chunk (e.g. to another
# server). Chunks are bytes (a client without decode_responses); iterator 0
# ends the dump.
raw = redis.Redis(host="127.0.0.1", port=port)
for family, src in ((raw.bf(), "crawled"), (raw.cf(), "online")):
    iterator, chunks = 0, 0
    while True:
        iterator, data = family.scandump(src, iterator)
        if iterator == 0:
            break
        family.loadchunk(src + "-copy", iterator, data)
        chunks += 1
    print(f"SCANDUMP {src} -> LOADCHUNK {src}-copy: {chunks} chunks")
assert bf.mexists("crawled-copy", "https://example.com/", "https://example.com/b") == [1, 0]
assert cf.mexists("online-copy", "alice", "bob", "carol") == [1, 0, 1]
assert bf.info("crawled-copy").size == bf.info("crawled").size

print("redis-py example: ok")
