import { assertClose, gpuTest, randomArray } from "../../testing/mod.ts";
import { Tensor } from "../../tensor/mod.ts";
import { sumPiSquaredRef } from "../sum_pi_squared.ts";
import { sumPiSquared } from "./sum_pi_squared.ts";

gpuTest("sumPiSquared matches the reference (temperatures 1 and 0.7, odd vocabulary)", async () => {
  for (const [rows, T, V, tau] of [[2, 3, 37, 1], [1, 5, 300, 0.7], [3, 1, 1, 1]] as const) {
    const logits = randomArray(rows * T * V, rows + V, -4, 4);
    const out = sumPiSquared(Tensor.from(logits, [rows, T, V]), { temperature: tau });
    assertClose(await out.toArray(), sumPiSquaredRef(logits, V, tau), {
      atol: 1e-6,
      rtol: 1e-5,
      label: `[${rows}, ${T}, ${V}] τ=${tau}`,
    });
  }
});

gpuTest("sumPiSquared: a uniform row gives 1/V, a one-hot-like row nearly 1", async () => {
  const out = sumPiSquared(Tensor.from([0, 0, 0, 0, 50, 0, 0, 0], [2, 4]));
  assertClose(await out.toArray(), [0.25, 1], { atol: 1e-6 });
});
