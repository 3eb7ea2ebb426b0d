/** Generalised advantage estimation over critic values (PPO). */
import { ADV_ESTIMATORS, gaeScan, need } from "../advantage.ts";
import { checkSameLength, maskedWhiten } from "../masked.ts";

// gae: returns from the raw scan, advantages whitened over valid tokens.
ADV_ESTIMATORS.register("gae", {
  critic: true,
  keys: ["algorithm.gamma", "algorithm.lam"],
  doc: "A = whiten(GAE(δ_t = r_t + γV_{t+1} - V_t, λ)) over valid tokens; returns = GAE + V",
  compute: (inp, o) => {
    const values = need(inp.values, "values [B, R]", "gae");
    checkSameLength({ tokenLevelRewards: inp.tokenLevelRewards, values });
    const scan = gaeScan(inp.tokenLevelRewards, values, inp.responseMask, inp.R, o);
    return { advantages: maskedWhiten(scan.advantages, inp.responseMask), returns: scan.returns };
  },
});
