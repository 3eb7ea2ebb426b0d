/**
 * Durable file-system steps for checkpoints: fsync of files and folders, atomic replacement of a
 * small file, rename-then-delete, and a walk over a folder's files. A rename is only durable once
 * the folder holding it is synced, so every step that renames syncs the parent afterwards.
 */

export function exists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Flushes a file's or a folder's contents (and a folder's entries) to the disk. */
export function fsync(path: string): void {
  const f = Deno.openSync(path, { read: true });
  try {
    f.syncSync();
  } finally {
    f.close();
  }
}

/** The folder part of a path ("." for a bare name). */
export function parentOf(path: string): string {
  const trimmed = path.replace(/\/+$/, "");
  const slash = trimmed.lastIndexOf("/");
  return slash < 0 ? "." : trimmed.slice(0, slash) || "/";
}

/**
 * Replaces `path` with `data` so that a crash leaves either the old or the new content: a
 * `{path}.tmp-{pid}` file is written and synced, renamed over `path`, and the folder synced.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  const tmp = `${path}.tmp-${Deno.pid}`;
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const f = Deno.openSync(tmp, { write: true, create: true, truncate: true });
  try {
    let off = 0;
    while (off < bytes.length) off += f.writeSync(bytes.subarray(off));
    f.syncSync();
  } finally {
    f.close();
  }
  Deno.renameSync(tmp, path);
  fsync(parentOf(path));
}

/**
 * Deletes a file or folder so that a crash midway never leaves a half-deleted one under its real
 * name: it is first renamed to `{parent}/.deleting-{name}-{pid}` (cleaned at the next start).
 * `beforeRemove` runs between the two steps (crash tests kill the process there).
 */
export function removeAside(path: string, beforeRemove?: () => void): void {
  const parent = parentOf(path);
  const name = path.replace(/\/+$/, "").split("/").at(-1);
  const aside = `${parent}/.deleting-${name}-${Deno.pid}`;
  if (exists(aside)) Deno.removeSync(aside, { recursive: true });
  Deno.renameSync(path, aside);
  fsync(parent);
  beforeRemove?.();
  Deno.removeSync(aside, { recursive: true });
}

/** Every file under `dir`, as paths relative to it ("actor/model.safetensors"), sorted. */
export function walkFiles(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(prefix ? `${dir}/${prefix}` : dir)) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory) out.push(...walkFiles(dir, rel));
    else if (e.isFile) out.push(rel);
  }
  return out.sort();
}

/** Every folder under `dir` (relative paths), deepest first, then `dir` itself as "". */
export function walkDirs(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(prefix ? `${dir}/${prefix}` : dir)) {
    if (e.isDirectory) out.push(...walkDirs(dir, prefix ? `${prefix}/${e.name}` : e.name));
  }
  out.push(prefix);
  return out;
}
