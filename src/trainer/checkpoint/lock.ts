/**
 * One run per checkpoint folder: `{default_local_dir}/webrl.lock` names the process that owns the
 * folder (pid, host, start time). A second run is refused with that process's details; a lock
 * left by a process that is no longer alive on this host is taken over with a notice. The lock is
 * removed when the process exits normally (the `unload` event, which `Deno.exit` also fires).
 */
import { exists, fsync } from "./durable.ts";

export const LOCK_FILE = "webrl.lock";

export interface LockInfo {
  pid: number;
  host: string;
  /** ISO time the run started. */
  started: string;
  /** The kernel's start time of the process (Linux), telling a reused pid from the original. */
  proc_start?: string;
  command?: string;
}

export class LockError extends Error {
  override name = "LockError";
}

export function hostName(): string {
  try {
    return Deno.hostname();
  } catch {
    return "localhost";
  }
}

/** Field 22 of /proc/{pid}/stat (start time in clock ticks since boot), when there is a /proc. */
function procStart(pid: number): string | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/** Whether the lock's owner is still running: true when it cannot be told (another host). */
export function ownerAlive(info: LockInfo): boolean {
  if (info.host !== hostName()) return true;
  if (info.pid === Deno.pid) return true;
  if (!exists("/proc/self/stat")) return true; // no /proc: assume alive, the message says what to do
  const start = procStart(info.pid);
  if (start === undefined) return false;
  return info.proc_start === undefined || info.proc_start === start;
}

function readLock(path: string): LockInfo | null {
  try {
    const info = JSON.parse(Deno.readTextFileSync(path)) as LockInfo;
    return Number.isInteger(info.pid) && typeof info.host === "string" ? info : null;
  } catch {
    return null;
  }
}

const held = new Set<string>();
let unloadHooked = false;

/** Removes the locks this process holds (normal exit, or a test that is done with a folder). */
export function releaseLocks(): void {
  for (const path of held) {
    if (readLock(path)?.pid === Deno.pid) {
      try {
        Deno.removeSync(path);
      } catch { /* the folder may be gone already */ }
    }
  }
  held.clear();
}

/**
 * Takes `{root}/webrl.lock` for this process (again, if it already holds it). Throws a LockError
 * naming the owner when a live process holds it; takes over a dead owner's lock with a notice.
 */
export function acquireLock(root: string, print: (line: string) => void): void {
  Deno.mkdirSync(root, { recursive: true });
  const path = `${root}/${LOCK_FILE}`;
  const me: LockInfo = {
    pid: Deno.pid,
    host: hostName(),
    started: new Date().toISOString(),
    proc_start: procStart(Deno.pid),
    command: ["deno", ...Deno.args].join(" "),
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    const tmp = `${path}.tmp-${Deno.pid}`;
    Deno.writeTextFileSync(tmp, JSON.stringify(me, null, 1) + "\n");
    fsync(tmp);
    try {
      Deno.linkSync(tmp, path); // atomic: fails when a lock exists
      Deno.removeSync(tmp);
      fsync(root);
      held.add(path);
      if (!unloadHooked) globalThis.addEventListener("unload", releaseLocks);
      unloadHooked = true;
      return;
    } catch (e) {
      Deno.removeSync(tmp);
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
    const other = readLock(path);
    if (other?.pid === Deno.pid && other.host === me.host) {
      held.add(path);
      return;
    }
    if (other && ownerAlive(other)) {
      throw new LockError(
        `${path}: the checkpoint folder is in use by another run (pid ${other.pid} on host ` +
          `${other.host}, started ${other.started}${other.command ? `: ${other.command}` : ""}). ` +
          "Wait for it to finish or stop it, or give this run another trainer.default_local_dir " +
          `(or trainer.experiment_name); if that process is not a webrl run, delete ${path}.`,
      );
    }
    // Dead owner (or an unreadable lock): move it aside, then try again.
    const stale = `${path}.stale-${Deno.pid}`;
    try {
      Deno.renameSync(path, stale);
      Deno.removeSync(stale);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      continue; // another starter took it over first
    }
    print(
      other
        ? `notice: taking over ${path} from pid ${other.pid} on ${other.host} (started ` +
          `${other.started}), which is no longer running`
        : `notice: replacing the unreadable lock file ${path}`,
    );
  }
  throw new LockError(`${path}: could not take the lock (other runs keep starting here)`);
}
