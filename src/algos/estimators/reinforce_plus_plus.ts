/** REINFORCE++: discounted token returns, whitened over the batch. */
import { ADV_ESTIMATORS, maskMul } from "../advantage.ts";
import { like, maskedWhiten, rowsOf } from "../masked.ts";

// reinforce_plus_plus: G_t = r_t + γ·G_{t+1}, where the running return is zeroed after every
// position with mask 0 (verl's "reset after EOS"; tool output in the middle resets it too).
// Advantages are G whitened over valid tokens and zeroed elsewhere; returns are G.
ADV_ESTIMATORS.register("reinforce_plus_plus", {
  keys: ["algorithm.gamma"],
  doc: "G_t = r_t + γ·G_{t+1}, reset after masked tokens; A = whiten(G) over valid tokens",
  compute: (inp, o) => {
    const { tokenLevelRewards: r, responseMask: mask, R } = inp;
    const B = rowsOf(r.length, R);
    const returns = like(r);
    for (let b = 0; b < B; b++) {
      let running = 0;
      for (let t = b * R + R - 1; t >= b * R; t--) {
        running = r[t] + o.gamma * running;
        returns[t] = running;
        if (mask[t] === 0) running = 0;
      }
    }
    return { advantages: maskMul(maskedWhiten(returns, mask), mask), returns };
  },
});
