// rsbloom from Node.js: node-redis (@redis/client) with its RedisBloom
// module @redis/bloom (bf, cf, cms, topK, tDigest), one small real use each.
// Run: npm ci && node bloom.mjs [PORT]
import assert from 'node:assert/strict';
import { createClient, RESP_TYPES } from '@redis/client';
import bloomPackage from '@redis/bloom';

const bloom = bloomPackage.default; // bf, cf, ... (a CommonJS package)

const port = Number(process.argv[2] ?? 6379);
const client = await createClient({ url: `redis://127.0.0.1:${port}`, modules: bloom }).connect();
await client.del(['crawled', 'crawled-copy', 'online', 'online-copy', 'hits', 'top-products', 'latency']);

// Bloom filter: de-duplicate. A crawler visits each URL once: false means
// certainly new, true already seen (or, 0.1 % of the time, a false positive).
await client.bf.reserve('crawled', 0.001, 1000);
for (const url of ['https://example.com/', 'https://example.com/a', 'https://example.com/']) {
  console.log(await client.bf.add('crawled', url) ? 'crawl' : 'skip (seen)', url);
}
assert.deepEqual(await client.bf.mExists('crawled', ['https://example.com/a', 'https://example.com/b']), [true, false]);
const bfInfo = await client.bf.info('crawled');
console.log('BF.INFO crawled', bfInfo);
assert.equal(bfInfo['Number of items inserted'], 2);

// Cuckoo filter: membership you can delete from. Who is online: log in
// adds, log out deletes.
await client.cf.reserve('online', 1000);
assert.equal(await client.cf.add('online', 'alice'), true);
assert.equal(await client.cf.addNX('online', 'alice'), false);
assert.deepEqual(await client.cf.insert('online', ['bob', 'carol']), [true, true]);
assert.equal(await client.cf.del('online', 'bob'), true); // bob logs out
assert.deepEqual(await client.cf.mExists('online', ['alice', 'bob', 'carol']), [true, false, true]);
console.log('CF.INFO online', await client.cf.info('online'));

// Count-Min Sketch: frequencies in fixed memory. Requests per client IP;
// a count is never under the truth.
await client.cms.initByProb('hits', 0.001, 0.01);
for (const ip of ['10.0.0.1', '10.0.0.2', '10.0.0.1', '10.0.0.1']) {
  await client.cms.incrBy('hits', { item: ip, incrementBy: 1 });
}
assert.deepEqual(await client.cms.query('hits', ['10.0.0.1', '10.0.0.2', '10.0.0.3']), [3, 1, 0]);
console.log('CMS.INFO hits', await client.cms.info('hits'));

// Top-K: heavy hitters. The 3 most viewed products of a stream of views;
// TOPK.ADD answers the item each view pushed out of the top 3, if any.
await client.topK.reserve('top-products', 3, { width: 50, depth: 4, decay: 0.9 });
const expelled = await client.topK.add('top-products', ['shoes', 'hat', 'shoes', 'socks', 'shoes', 'hat', 'scarf']);
console.log('TOPK.ADD pushed out:', expelled.filter((e) => e !== null));
await client.topK.incrBy('top-products', [{ item: 'socks', incrementBy: 4 }, { item: 'belt', incrementBy: 1 }]);
const top = await client.topK.listWithCount('top-products');
console.log('top 3:', top);
assert.deepEqual(top, [{ item: 'socks', count: 5 }, { item: 'shoes', count: 3 }, { item: 'hat', count: 2 }]);
assert.deepEqual(await client.topK.query('top-products', ['shoes', 'scarf']), [true, false]);

// T-Digest: percentiles of a stream. Request latencies in milliseconds, two
// of 16 slow: median, 90th and 99th percentile, and the share under 20 ms.
await client.tDigest.create('latency');
await client.tDigest.add('latency', [12, 15, 11, 14, 13, 12, 16, 11, 13, 250, 12, 14, 13, 15, 90, 12]);
const [p50, p90, p99] = await client.tDigest.quantile('latency', [0.5, 0.9, 0.99]);
console.log(`latency p50 ${p50} ms, p90 ${p90} ms, p99 ${p99} ms`);
assert.deepEqual([p50, p90, p99], [13, 90, 250]);
assert.deepEqual(await client.tDigest.cdf('latency', [20]), [0.875]);
assert.deepEqual([await client.tDigest.min('latency'), await client.tDigest.max('latency')], [11, 250]);

// SCANDUMP / LOADCHUNK: copy each filter chunk by chunk (e.g. to another
// server). Chunks are binary: read them as Buffers, not UTF-8 text.
const binary = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
for (const [family, from] of [['bf', 'crawled'], ['cf', 'online']]) {
  let chunks = 0;
  for (let iterator = 0; ;) {
    const dump = await binary[family].scanDump(from, iterator);
    iterator = dump.iterator;
    if (iterator === 0) break;
    await binary[family].loadChunk(`${from}-copy`, iterator, dump.chunk);
    chunks++;
  }
  console.log(`${family.toUpperCase()}.SCANDUMP ${from} -> ${family.toUpperCase()}.LOADCHUNK ${from}-copy: ${chunks} chunks`);
}
assert.deepEqual(await client.bf.mExists('crawled-copy', ['https://example.com/', 'https://example.com/b']), [true, false]);
assert.deepEqual(await client.cf.mExists('online-copy', ['alice', 'bob', 'carol']), [true, false, true]);
assert.deepEqual(await client.bf.info('crawled-copy'), bfInfo);

await client.close();
console.log('node-redis example: ok');
