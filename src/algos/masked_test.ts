import assert from "node:assert/strict";
import {
  maskCount,
  maskedMax,
  maskedMean,
  maskedMin,
  maskedSum,
  maskedVar,
  maskedWhiten,
  rowMaskedMean,
  rowsOf,
} from "./masked.ts";
import { assertClose } from "./test_util.ts";

// x = [1, NaN (masked), 3, 6] with mask as Float32Array, Uint8Array and Int32Array alike
const x = new Float32Array([1, NaN, 3, 6]);
const masks = [
  new Float32Array([1, 0, 1, 1]),
  new Uint8Array([1, 0, 1, 1]),
  new Int32Array([1, 0, 1, 1]),
];

Deno.test("masked reductions skip invalid (even NaN) elements for every mask type", () => {
  for (const m of masks) {
    assert.equal(maskCount(m), 3);
    assert.equal(maskedSum(x, m), 10);
    assertClose(maskedMean(x, m), 10 / 3);
    assert.equal(maskedMax(x, m), 6);
    assert.equal(maskedMin(x, m), 1);
    // mean 10/3; deviations -7/3, -1/3, 8/3; squares 49/9 + 1/9 + 64/9 = 114/9
    assertClose(maskedVar(x, m), 114 / 9 / 2); // unbiased: / (3 - 1)
    assertClose(maskedVar(x, m, false), 114 / 9 / 3);
  }
});

Deno.test("empty selections: mean 0, max -Inf, min +Inf; unbiased var needs 2 elements", () => {
  const none = new Float32Array(4);
  assert.equal(maskedMean(x, none), 0);
  assert.equal(maskedMax(x, none), -Infinity);
  assert.equal(maskedMin(x, none), Infinity);
  assert.throws(() => maskedVar(x, none), /at least 2/);
  assert.throws(() => maskedVar(x, new Float32Array([1, 0, 0, 0])), /at least 2/);
});

Deno.test("maskedWhiten: (x - mean)/sqrt(var + 1e-8) on all elements", () => {
  // valid [1, 3]: mean 2, unbiased var 2 -> [-1, ·, 1]/sqrt(2 + 1e-8); padding (5) -> 3/sqrt(2+1e-8)
  const v = new Float64Array([1, 5, 3]), m = new Float32Array([1, 0, 1]);
  const sd = Math.sqrt(2 + 1e-8);
  assertClose(maskedWhiten(v, m), [-1 / sd, 3 / sd, 1 / sd], 1e-12);
  assertClose(maskedWhiten(v, m, false), [2 - 1 / sd, 2 + 3 / sd, 2 + 1 / sd], 1e-12);
});

Deno.test("rowMaskedMean gives 0 for an all-padding row; rowsOf validates shapes", () => {
  const v = new Float32Array([1, 2, 4, 7, 7, 7]), m = new Float32Array([1, 0, 1, 0, 0, 0]);
  assertClose(rowMaskedMean(v, m, 3), [2.5, 0]);
  assert.equal(rowsOf(6, 3), 2);
  assert.throws(() => rowsOf(7, 3), /not \[B, 3\]/);
  assert.throws(() => rowsOf(6, 0), /R must be > 0/);
});
