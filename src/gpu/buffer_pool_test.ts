import assert from "node:assert/strict";
import { BufferPool } from "./buffer_pool.ts";
import { initGpu } from "./device.ts";

Deno.test("BufferPool counts bytes in use and reserved, with their peaks", async () => {
  const g = await initGpu();
  const pool = new BufferPool(g.device, g.limits.maxBufferSize);
  const a = pool.acquire(1000), b = pool.acquire(4096);
  const sa = BufferPool.sizeClass(1000);
  assert.equal(pool.inUseBytes, sa + 4096);
  assert.equal(pool.reservedBytes, sa + 4096);
  pool.release(a);
  assert.equal(pool.inUseBytes, 4096);
  assert.equal(pool.reservedBytes, sa + 4096, "a free buffer stays reserved");
  const c = pool.acquire(1000); // reuses a
  assert.equal(c, a);
  assert.equal(pool.reservedBytes, sa + 4096);
  pool.release(b);
  pool.release(c);
  assert.equal(pool.peakBytes, sa + 4096);
  pool.trim();
  assert.equal(pool.reservedBytes, 0);
  assert.equal(pool.peakReservedBytes, sa + 4096);
  pool.resetPeak();
  assert.equal(pool.peakBytes, 0);
  assert.equal(pool.peakReservedBytes, 0);
});

Deno.test("BufferPool hands out a class's oldest free buffer, whatever the return order", async () => {
  const g = await initGpu();
  const pool = new BufferPool(g.device, g.limits.maxBufferSize);
  const [a, b, c] = [pool.acquire(256), pool.acquire(256), pool.acquire(256)];
  for (const order of [[a, b, c], [c, a, b], [b, c, a]]) {
    for (const buf of order) pool.release(buf);
    assert.deepEqual([pool.acquire(256), pool.acquire(256), pool.acquire(256)], [a, b, c]);
  }
  pool.release(c);
  pool.release(a);
  assert.equal(pool.acquire(250), a, "the oldest of the free ones (250 bytes: the same class)");
  assert.equal(pool.acquire(256), c);
  for (const buf of [a, b, c]) pool.release(buf);
  pool.trim();
});
