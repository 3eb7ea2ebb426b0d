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
