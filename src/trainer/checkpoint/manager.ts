/**
 * Checkpoint folders in verl's layout: `{root}/global_step_N/{actor,critic}/...` and
 * `{root}/latest_checkpointed_iteration.txt`. A checkpoint is written into a hidden temporary
 * folder and renamed into place only when complete, and the tracker file is replaced atomically
 * afterwards, so a crash at any moment leaves either the previous checkpoint or the new one.
 */

export const TRACKER_FILE = "latest_checkpointed_iteration.txt";
const STEP_RE = /^global_step_(\d+)$/;

export class CheckpointError extends Error {
  override name = "CheckpointError";
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Writes `text` to `path` through a temporary file and a rename. */
export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  const tmp = `${path}.tmp-${Deno.pid}`;
  if (typeof data === "string") Deno.writeTextFileSync(tmp, data);
  else Deno.writeFileSync(tmp, data);
  Deno.renameSync(tmp, path);
}

/** Steps of the complete checkpoints under root, ascending. */
export function listCheckpoints(root: string): number[] {
  if (!exists(root)) return [];
  const steps: number[] = [];
  for (const e of Deno.readDirSync(root)) {
    const m = e.isDirectory ? STEP_RE.exec(e.name) : null;
    if (m) steps.push(Number(m[1]));
  }
  return steps.sort((a, b) => a - b);
}

/**
 * Saves a checkpoint: `write(tmpDir)` fills a temporary folder, which then becomes
 * `global_step_{step}`; the tracker is updated and old checkpoints beyond `maxToKeep` removed.
 */
export async function saveCheckpoint(
  root: string,
  step: number,
  write: (dir: string) => Promise<void>,
  options: { maxToKeep?: number | null } = {},
): Promise<string> {
  Deno.mkdirSync(root, { recursive: true });
  const final = `${root}/global_step_${step}`;
  const tmp = `${root}/.tmp_global_step_${step}_${Deno.pid}`;
  if (exists(tmp)) Deno.removeSync(tmp, { recursive: true });
  Deno.mkdirSync(tmp);
  try {
    await write(tmp);
  } catch (e) {
    Deno.removeSync(tmp, { recursive: true });
    throw e;
  }
  // Crash-safety tests kill the process here, with the new checkpoint written but not in place.
  if (Deno.env.get("WEBRL_KILL_DURING_SAVE") === String(step)) Deno.kill(Deno.pid, "SIGKILL");
  if (exists(final)) {
    // Re-saving a step (a resumed run that reached it again): move the old one aside first.
    const old = `${root}/.old_global_step_${step}_${Deno.pid}`;
    Deno.renameSync(final, old);
    Deno.renameSync(tmp, final);
    Deno.removeSync(old, { recursive: true });
  } else Deno.renameSync(tmp, final);
  writeFileAtomic(`${root}/${TRACKER_FILE}`, String(step));
  const keep = options.maxToKeep;
  if (keep && keep > 0) {
    const steps = listCheckpoints(root);
    for (const s of steps.slice(0, Math.max(0, steps.length - keep))) {
      Deno.removeSync(`${root}/global_step_${s}`, { recursive: true });
    }
  }
  // Leftovers of runs killed mid-save are never picked up; clean them now.
  for (const e of Deno.readDirSync(root)) {
    if (e.name.startsWith(".tmp_global_step_") && !e.name.endsWith(`_${Deno.pid}`)) {
      Deno.removeSync(`${root}/${e.name}`, { recursive: true });
    }
  }
  return final;
}

/** The newest complete checkpoint under root (the tracker file, else the highest folder). */
export function findLatestCheckpoint(root: string): string | null {
  const tracker = `${root}/${TRACKER_FILE}`;
  if (exists(tracker)) {
    const step = Deno.readTextFileSync(tracker).trim();
    if (!/^\d+$/.test(step)) {
      throw new CheckpointError(`${tracker}: expected a step number, found "${step}"`);
    }
    const dir = `${root}/global_step_${step}`;
    if (exists(dir)) return dir;
  }
  const steps = listCheckpoints(root);
  return steps.length ? `${root}/global_step_${steps.at(-1)}` : null;
}

/** The step number in a `global_step_N` path. */
export function stepOfCheckpoint(path: string): number {
  const name = path.replace(/\/+$/, "").split("/").at(-1) ?? "";
  const m = STEP_RE.exec(name);
  if (!m) {
    throw new CheckpointError(
      `trainer.resume_from_path: "${path}" must be a global_step_N checkpoint folder`,
    );
  }
  return Number(m[1]);
}

/**
 * verl's resume modes: `disable` starts fresh, `auto` takes the newest checkpoint under the
 * default folder if any, `resume_path` requires `resumeFromPath` to name a global_step_N folder.
 */
export function resolveResume(
  mode: string,
  options: { root: string; resumeFromPath?: string | null },
): string | null {
  switch (mode) {
    case "disable":
      return null;
    case "auto":
      return findLatestCheckpoint(options.root);
    case "resume_path": {
      const p = options.resumeFromPath;
      if (!p) {
        throw new CheckpointError(
          "trainer.resume_mode=resume_path needs trainer.resume_from_path",
        );
      }
      stepOfCheckpoint(p);
      if (!exists(p)) throw new CheckpointError(`trainer.resume_from_path: ${p} does not exist`);
      return p;
    }
    default:
      throw new CheckpointError(
        `trainer.resume_mode: unknown mode "${mode}" (valid: auto, disable, resume_path)`,
      );
  }
}
