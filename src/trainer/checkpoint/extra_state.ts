/**
 * `global_step_N/extra_state.json`: the step, the data loader's position (epoch, cursor and the
 * shuffle's seed), the KL controller (PPO; null in SFT) and the resolved config of the run that
 * saved it. Read and checked field by field before any work starts,
 * so a damaged or hand-edited file is an error naming the file and the field.
 */

export const EXTRA_STATE_FILE = "extra_state.json";

export interface ExtraState {
  global_step: number;
  /** `seed`: the shuffle's (absent when the saved run did not shuffle, or in older files). */
  data_loader: { epoch: number; cursor: number; seed?: number };
  kl_ctrl: Record<string, unknown> | null;
  /** The saved run's resolved config as YAML ("" when absent). */
  config: string;
}

export class ExtraStateError extends Error {
  override name = "ExtraStateError";
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * Parses the text of `file`; `folderStep` is the N of the `global_step_N` folder it lies in, which
 * `global_step` must equal.
 */
export function parseExtraState(text: string, file: string, folderStep: number): ExtraState {
  const fail = (what: string) => new ExtraStateError(`${file}: ${what}`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw fail(
      `not valid JSON (${(e as Error).message}); the file is truncated or damaged`,
    );
  }
  if (!isObject(raw)) throw fail("expected a JSON object");
  const step = raw.global_step;
  if (!isCount(step)) {
    throw fail(`field "global_step" must be a non-negative integer, found ${JSON.stringify(step)}`);
  }
  if (step !== folderStep) {
    throw fail(
      `field "global_step" is ${step} but the folder is global_step_${folderStep}`,
    );
  }
  const loader = raw.data_loader;
  if (
    !isObject(loader) || !isCount(loader.epoch) || !isCount(loader.cursor) ||
    (loader.seed !== undefined && !Number.isSafeInteger(loader.seed))
  ) {
    throw fail(
      `field "data_loader" must be {"epoch": n, "cursor": n, "seed"?: n} with non-negative ` +
        `epoch and cursor, found ${JSON.stringify(loader)}`,
    );
  }
  const seed = loader.seed === undefined ? {} : { seed: loader.seed as number };
  const kl = raw.kl_ctrl ?? null;
  if (
    kl !== null &&
    (!isObject(kl) || typeof kl.type !== "string" || !Number.isFinite(kl.value))
  ) {
    throw fail(
      `field "kl_ctrl" must be null or {"type": ..., "value": <finite number>, ...}, found ` +
        JSON.stringify(kl),
    );
  }
  const config = raw.config ?? "";
  if (typeof config !== "string") throw fail(`field "config" must be the YAML text of a config`);
  return {
    global_step: step,
    data_loader: { epoch: loader.epoch as number, cursor: loader.cursor as number, ...seed },
    kl_ctrl: kl,
    config,
  };
}

/** Reads and checks `{dir}/extra_state.json`. */
export function readExtraState(dir: string, folderStep: number): ExtraState {
  const file = `${dir}/${EXTRA_STATE_FILE}`;
  let text: string;
  try {
    text = Deno.readTextFileSync(file);
  } catch (e) {
    throw new ExtraStateError(
      `${file} cannot be read (${(e as Error).message}); the checkpoint is incomplete or not a ` +
        "webrl checkpoint",
    );
  }
  return parseExtraState(text, file, folderStep);
}
