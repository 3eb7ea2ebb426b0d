/**
 * Fixed costs of the runtime that shape the whole design: a submit, a submit followed by
 * onSubmittedWorkDone (a sync), a 4-byte readback, and recording one small dispatch.
 *   deno bench -A bench/runtime_bench.ts
 */
import { gpu, initGpu } from "../src/gpu/mod.ts";
import { fillInPlace } from "../src/tensor/mod.ts";
import { Tensor } from "../src/tensor/mod.ts";

const g = await initGpu();
const small = Tensor.from([1, 2, 3, 4], [4]).keep();

Deno.bench({
  name: "empty submit",
  group: "runtime",
  fn() {
    g.device.queue.submit([g.device.createCommandEncoder().finish()]);
  },
});

Deno.bench({
  name: "submit + onSubmittedWorkDone",
  group: "runtime",
  async fn() {
    g.device.queue.submit([g.device.createCommandEncoder().finish()]);
    await g.device.queue.onSubmittedWorkDone();
  },
});

Deno.bench({
  name: "4-byte readback",
  group: "runtime",
  async fn() {
    await gpu().read([{ buffer: small.buffer, size: 4 }]);
  },
});

Deno.bench({
  name: "record 100 small dispatches, then one submit (no wait)",
  group: "runtime",
  fn() {
    for (let i = 0; i < 100; i++) fillInPlace(small, i);
    gpu().flush();
  },
});
