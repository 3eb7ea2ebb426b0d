/**
 * Every advantage estimator, registered on import. A new estimator is one file in this folder
 * (plus its test) and one line here.
 */
import "./gae.ts";
import "./grpo.ts";
import "./rloo.ts";
import "./opo.ts";
import "./gpg.ts";
import "./reinforce_plus_plus_baseline.ts";
import "./reinforce_plus_plus.ts";
import "./remax.ts";
