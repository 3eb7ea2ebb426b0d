import assert from "node:assert/strict";
import { LOSS_SCALER_DEFAULTS, LossScaler } from "./loss_scaler.ts";

Deno.test("LossScaler: torch GradScaler's defaults, backoff on overflow, growth after the interval", () => {
  const s = new LossScaler();
  assert.equal(s.scale, 2 ** 16);
  assert.equal(s.inverse, 2 ** -16);
  assert.equal(LOSS_SCALER_DEFAULTS.growthInterval, 2000);
  s.update(false);
  assert.equal(s.scale, 2 ** 15);
  for (let i = 0; i < 1999; i++) s.update(true);
  assert.equal(s.scale, 2 ** 15, "no growth before 2000 good steps");
  s.update(true);
  assert.equal(s.scale, 2 ** 16);
  assert.deepEqual(s.state(), { scale: 2 ** 16, goodSteps: 0 });
});

Deno.test("LossScaler: an overflow resets the good-step count; state round-trips", () => {
  const s = new LossScaler({ initScale: 8, growthInterval: 3 });
  s.update(true);
  s.update(true);
  s.update(false); // 8 -> 4, count back to 0
  s.update(true);
  s.update(true);
  assert.equal(s.scale, 4);
  s.update(true);
  assert.equal(s.scale, 8);
  s.update(true);
  const t = new LossScaler();
  t.loadState(s.state());
  assert.deepEqual(t.state(), { scale: 8, goodSteps: 1 });
  assert.throws(() => t.loadState({ scale: 0, goodSteps: 0 }), /bad saved state/);
  assert.throws(() => new LossScaler({ backoffFactor: 1 }), /backoffFactor/);
});

Deno.test("LossScaler: growth stops short of overflowing f32", () => {
  const s = new LossScaler({ initScale: 2 ** 127, growthInterval: 1 });
  s.update(true);
  assert.equal(s.scale, 2 ** 127);
});
