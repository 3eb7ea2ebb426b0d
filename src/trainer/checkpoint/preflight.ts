/**
 * Output folders are checked before any work starts: each must be a folder we can create files in
 * (or, when it does not exist yet, its nearest existing parent must be). Nothing is created: a
 * probe file is written and removed in the nearest existing folder.
 */
import { ConfigError } from "../../config/mod.ts";
import { parentOf } from "./durable.ts";

/** The nearest path of `path` and its parents that exists. */
function nearestExisting(path: string): { path: string; info: Deno.FileInfo } {
  let p = path.replace(/\/+$/, "") || "/";
  for (;;) {
    try {
      return { path: p, info: Deno.statSync(p) };
    } catch (e) {
      // NotFound, or NotADirectory when a parent is a file: look further up.
      const up = parentOf(p);
      if (up === p) throw e;
      p = up;
    }
  }
}

/** Throws a ConfigError naming `key` when files cannot be created in `dir`. */
export function checkWritable(key: string, dir: string): void {
  let near: { path: string; info: Deno.FileInfo };
  try {
    near = nearestExisting(dir);
  } catch (e) {
    throw new ConfigError(key, `${key}: cannot use ${dir} (${(e as Error).message})`);
  }
  if (!near.info.isDirectory) {
    throw new ConfigError(
      key,
      `${key}: cannot create ${dir}: ${near.path} is a file, not a folder`,
    );
  }
  const probe = `${near.path}/.webrl-write-probe-${Deno.pid}`;
  try {
    Deno.writeTextFileSync(probe, "");
    Deno.removeSync(probe);
  } catch (e) {
    throw new ConfigError(
      key,
      `${key}: ${near.path} is not writable, so ${dir} cannot be used (${(e as Error).message})`,
    );
  }
}

/** Checks each (key, folder) pair; null folders are skipped. */
export function checkWritableDirs(dirs: [key: string, dir: string | null][]): void {
  for (const [key, dir] of dirs) if (dir !== null) checkWritable(key, dir);
}
