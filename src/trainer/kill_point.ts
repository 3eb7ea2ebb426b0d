/**
 * Points where crash tests SIGKILL the trainer: `WEBRL_KILL_{point}=<step>` in the environment
 * kills the process when it reaches that point at that step. DURING_SAVE: a checkpoint's files are
 * written, not yet renamed into place. DURING_PRUNE: an old checkpoint part is renamed aside, not
 * yet deleted. DURING_LOG: a step's metrics are written to every logger, not yet flushed (and not
 * yet covered by a checkpoint). A no-op outside Deno or without permission to read the variable.
 */
export type KillPoint = "DURING_SAVE" | "DURING_PRUNE" | "DURING_LOG";

export function killPoint(point: KillPoint, step: number): void {
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  const variable = `WEBRL_KILL_${point}`;
  if (!deno || deno.permissions.querySync({ name: "env", variable }).state !== "granted") return;
  if (deno.env.get(variable) === String(step)) deno.kill(deno.pid, "SIGKILL");
}
