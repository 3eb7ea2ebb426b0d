/**
 * Every policy loss, registered on import in verl's order. A new loss is one file in this folder
 * (plus its test), one line here, and its GPU form in ../gpu/ (GPU_POLICY_LOSSES).
 */
import "./vanilla.ts";
import "./gspo.ts";
import "./sapo.ts";
import "./gpg.ts";
import "./clip_cov.ts";
import "./kl_cov.ts";
import "./geo_mean.ts";
import "./cispo.ts";
import "./reinforce.ts";
