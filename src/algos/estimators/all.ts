/**
 * Every advantage estimator, registered on import (verl's core_algos registers the same names,
 * in this order). A new estimator is one file in this folder (plus its test) and one line here.
 */
import "./gae.ts";
import "./grpo.ts";
import "./reinforce_plus_plus.ts";
import "./reinforce_plus_plus_baseline.ts";
import "./remax.ts";
import "./rloo.ts";
import "./opo.ts";
import "./grpo_passk.ts";
import "./gpg.ts";
import "./rloo_vectorized.ts";
import "./grpo_vectorized.ts";
import "./optimal_token_baseline.ts";
import "./tir_optimal_token_baseline.ts";
