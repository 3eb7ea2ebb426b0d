/**
 * The end-of-run check both trainers' entry points share: a run asked to train that trained no
 * step did not do its job, and says which keys set its step count (and, when it resumed at or past
 * its last step, where the checkpoint is and how to go on).
 */
import { ConfigError } from "../config/mod.ts";

/** The trainer keys that set a run's length and where it resumes from. */
export interface StepKeys {
  total_training_steps: number | null;
  total_epochs: number;
  default_local_dir: string;
}

/** The run's step count in words, naming the key that sets it. */
export function stepsSetBy(t: StepKeys, total: number): string {
  return t.total_training_steps === null
    ? `trainer.total_epochs=${t.total_epochs} of the training set = ${total} steps`
    : `trainer.total_training_steps=${t.total_training_steps}`;
}

/**
 * The error of a run that trained no step; `globalStep` > 0 is the step it resumed at. `hint`
 * ends the message (a trainer's other way to do what the user may have meant).
 */
export function noStepError(
  t: StepKeys,
  o: { globalStep: number; total: number; hint?: string },
): ConfigError {
  const steps = stepsSetBy(t, o.total);
  const why = o.globalStep > 0
    ? `the run resumed from a checkpoint at global step ${o.globalStep} in ` +
      `trainer.default_local_dir=${t.default_local_dir}, and ${steps} are already done. ` +
      "Raise the step count to train on, or start a fresh run with trainer.resume_mode=disable " +
      "or another trainer.default_local_dir"
    : steps;
  return new ConfigError(
    t.total_training_steps === null ? "trainer.total_epochs" : "trainer.total_training_steps",
    `no training step ran: ${why}${o.hint ? ` (${o.hint})` : ""}`,
  );
}
