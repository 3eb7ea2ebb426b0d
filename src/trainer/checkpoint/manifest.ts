/**
 * Checksums of a checkpoint: `global_step_N/checksums.sha256` lists the SHA-256 of every other file
 * in the folder, in the format of `sha256sum` (so `sha256sum -c checksums.sha256` inside the folder
 * checks it by hand). It is written last, after every file it lists has been synced; resume
 * verifies it before trusting anything in the folder.
 */
import { exists, fsync, walkDirs, walkFiles } from "./durable.ts";

export const CHECKSUM_FILE = "checksums.sha256";

/** A file of a checkpoint that is missing or does not match its checksum. */
export interface ChecksumProblem {
  /** Path of the bad file (or of the checksum file itself when that is the problem). */
  file: string;
  why: string;
}

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const h = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...h].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Hashes and syncs every file under `dir`, writes the checksum file, then syncs every folder. */
export async function writeManifest(dir: string): Promise<void> {
  const lines: string[] = [];
  for (const rel of walkFiles(dir)) {
    if (rel === CHECKSUM_FILE) continue;
    lines.push(`${await sha256(Deno.readFileSync(`${dir}/${rel}`))}  ${rel}`);
    fsync(`${dir}/${rel}`);
  }
  Deno.writeTextFileSync(`${dir}/${CHECKSUM_FILE}`, lines.join("\n") + "\n");
  fsync(`${dir}/${CHECKSUM_FILE}`);
  for (const rel of walkDirs(dir)) fsync(rel ? `${dir}/${rel}` : dir);
}

/** The checksum file's entries, relative path -> hex digest; null when there is none. */
export function readManifest(dir: string): Map<string, string> | null {
  let text: string;
  try {
    text = Deno.readTextFileSync(`${dir}/${CHECKSUM_FILE}`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  const out = new Map<string, string>();
  for (const [i, line] of text.split("\n").entries()) {
    if (!line) continue;
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
    if (!m || m[2].split("/").includes("..")) {
      throw new Error(`${dir}/${CHECKSUM_FILE}: line ${i + 1} is not "<sha256>  <file>"`);
    }
    out.set(m[2], m[1]);
  }
  return out;
}

/**
 * Checks every file listed in the checksum file; returns the first problem, or null when all
 * match (files not listed are not checked). A folder without a checksum file is reported as such
 * (`why: "no checksum file"`).
 */
export async function verifyManifest(dir: string): Promise<ChecksumProblem | null> {
  let listed: Map<string, string> | null;
  try {
    listed = readManifest(dir);
  } catch (e) {
    return { file: `${dir}/${CHECKSUM_FILE}`, why: (e as Error).message };
  }
  if (!listed) return { file: `${dir}/${CHECKSUM_FILE}`, why: "no checksum file" };
  for (const [rel, want] of listed) {
    let bytes: Uint8Array<ArrayBuffer>;
    try {
      bytes = Deno.readFileSync(`${dir}/${rel}`);
    } catch (e) {
      const top = rel.split("/")[0];
      const why = rel.includes("/") && !exists(`${dir}/${top}`)
        ? `is missing: ${dir}/${top} was removed (pruned by max_${top}_ckpt_to_keep?)`
        : `cannot be read (${(e as Error).message})`;
      return { file: `${dir}/${rel}`, why };
    }
    const got = await sha256(bytes);
    if (got !== want) {
      return {
        file: `${dir}/${rel}`,
        why: `SHA-256 ${got} differs from ${want} in ${CHECKSUM_FILE}`,
      };
    }
  }
  return null;
}
