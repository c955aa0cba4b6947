// rsbloom from Node.js: node-redis (@redis/client) with its Bloom module
// @redis/bloom. Run: npm ci && node bloom.mjs [PORT]
import assert from 'node:assert/strict';
import { createClient, RESP_TYPES } from '@redis/client';
import bloomPackage from '@redis/bloom';

const bloom = bloomPackage.default; // bf, cf, ... (a CommonJS package)

const port = Number(process.argv[2] ?? 6379);
const client = await createClient({ url: `redis://127.0.0.1:${port}`, modules: bloom }).connect();
await client.del(['bf', 'bf-copy', 'cf', 'cf-copy']);

// Bloom filter: 1000 items at 0.1 % false positives.
await client.bf.reserve('bf', 0.001, 1000);
assert.equal(await client.bf.add('bf', 'apple'), true);
assert.deepEqual(await client.bf.mAdd('bf', ['banana', 'cherry']), [true, true]);
assert.equal(await client.bf.exists('bf', 'apple'), true);
assert.deepEqual(await client.bf.mExists('bf', ['banana', 'durian']), [true, false]);
const bfInfo = await client.bf.info('bf');
console.log('BF.INFO bf', bfInfo);
assert.equal(bfInfo['Number of items inserted'], 3);

// Cuckoo filter: items can be counted and deleted.
await client.cf.reserve('cf', 1000);
assert.equal(await client.cf.add('cf', 'apple'), true);
assert.equal(await client.cf.addNX('cf', 'apple'), false);
assert.deepEqual(await client.cf.insert('cf', ['banana', 'cherry']), [true, true]);
assert.equal(await client.cf.exists('cf', 'banana'), true);
assert.equal(await client.cf.count('cf', 'apple'), 1);
assert.equal(await client.cf.del('cf', 'banana'), true);
assert.deepEqual(await client.cf.mExists('cf', ['banana', 'cherry']), [false, true]);
const cfInfo = await client.cf.info('cf');
console.log('CF.INFO cf', cfInfo);

// SCANDUMP / LOADCHUNK: copy each filter chunk by chunk (e.g. to another
// server). Chunks are binary: read them as Buffers, not UTF-8 text.
const binary = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
for (const [family, from, to] of [['bf', 'bf', 'bf-copy'], ['cf', 'cf', 'cf-copy']]) {
  let chunks = 0;
  for (let iterator = 0; ;) {
    const dump = await binary[family].scanDump(from, iterator);
    iterator = dump.iterator;
    if (iterator === 0) break;
    await binary[family].loadChunk(to, iterator, dump.chunk);
    chunks++;
  }
  console.log(`${family.toUpperCase()}.SCANDUMP ${from} -> ${family.toUpperCase()}.LOADCHUNK ${to}: ${chunks} chunks`);
}
assert.deepEqual(await client.bf.mExists('bf-copy', ['apple', 'banana', 'cherry', 'durian']), [true, true, true, false]);
assert.deepEqual(await client.cf.mExists('cf-copy', ['apple', 'banana', 'cherry']), [true, false, true]);
assert.deepEqual(await client.bf.info('bf-copy'), bfInfo);

await client.close();
console.log('node-redis example: ok');
