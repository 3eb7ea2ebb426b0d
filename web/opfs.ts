/**
 * One run kept in the origin's private file system (OPFS, `navigator.storage.getDirectory()`), so
 * a reload can resume it:
 *
 *   webrl-run/run.json               settings, where model and prompts came from, total steps
 *   webrl-run/base/                  the starting model folder (the reference policy, the download's
 *                                    config and tokenizer files)
 *   webrl-run/rows.json              the training and held-out rows
 *   webrl-run/global_step_N/         actor.safetensors, actor_optim.safetensors (and critic_*),
 *                                    extra_state.json (step, loader, KL controller), metrics.json
 *   webrl-run/latest.json            {"step": N}, written after the step's folder is complete
 *
 * A checkpoint folder is complete before latest.json names it; older ones are removed after.
 */
import { parseSafetensors, type RawTensor, serializeSafetensors } from "../src/io/mod.ts";
import type { MetricPoint, SavedRunInfo } from "./protocol.ts";
import type { RunSettings } from "./settings.ts";
import type { PromptRows } from "./task.ts";

const ROOT = "webrl-run";

/** What run.json holds. */
export interface RunManifest {
  settings: RunSettings;
  model: string;
  data: string;
  totalSteps: number;
  savedAt: string;
}

/** A checkpoint as read back. */
export interface Checkpoint {
  step: number;
  actor: Map<string, Float32Array>;
  actorOptim: OptimState;
  critic: Map<string, Float32Array> | null;
  criticOptim: OptimState | null;
  extra: Record<string, unknown>;
  metrics: MetricPoint[];
}

export interface OptimState {
  step: number;
  m: Float32Array[];
  v: Float32Array[];
}

type Dir = FileSystemDirectoryHandle;

async function writeFile(dir: Dir, name: string, data: Uint8Array | string): Promise<void> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const handle = await dir.getFileHandle(name, { create: true });
  const h = handle as FileSystemFileHandle & {
    createWritable?: () => Promise<FileSystemWritableFileStream>;
  };
  if (h.createWritable) {
    const w = await h.createWritable();
    await w.write(bytes as Uint8Array<ArrayBuffer>);
    await w.close();
    return;
  }
  // Workers of browsers without createWritable have synchronous access handles.
  const sync = await (handle as unknown as {
    createSyncAccessHandle(): Promise<{
      truncate(n: number): void;
      write(b: Uint8Array, o: { at: number }): number;
      flush(): void;
      close(): void;
    }>;
  }).createSyncAccessHandle();
  sync.truncate(0);
  sync.write(bytes, { at: 0 });
  sync.flush();
  sync.close();
}

async function readBytes(dir: Dir, name: string): Promise<Uint8Array> {
  const file = await (await dir.getFileHandle(name)).getFile();
  return new Uint8Array(await file.arrayBuffer());
}

async function readJson<T>(dir: Dir, name: string): Promise<T> {
  return JSON.parse(new TextDecoder().decode(await readBytes(dir, name))) as T;
}

/** Weights by name as one F32 safetensors file. */
export function tensorsFile(tensors: ReadonlyMap<string, Float32Array>): Uint8Array {
  const raw: RawTensor[] = [...tensors].map(([name, v]) => ({
    name,
    dtype: "F32",
    shape: [v.length],
    bytes: new Uint8Array(v.buffer, v.byteOffset, v.byteLength),
  }));
  return serializeSafetensors(raw, { metadata: { format: "pt" } });
}

function readTensors(bytes: Uint8Array, file: string): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  for (const t of parseSafetensors(bytes, { file }).tensors) {
    out.set(t.name, new Float32Array(t.bytes.slice().buffer));
  }
  return out;
}

function optimFile(s: OptimState): Uint8Array {
  const tensors = new Map<string, Float32Array>();
  s.m.forEach((m, i) => tensors.set(`m.${i}`, m));
  s.v.forEach((v, i) => tensors.set(`v.${i}`, v));
  const raw = [...tensors].map(([name, v]): RawTensor => ({
    name,
    dtype: "F32",
    shape: [v.length],
    bytes: new Uint8Array(v.buffer, v.byteOffset, v.byteLength),
  }));
  return serializeSafetensors(raw, { metadata: { step: String(s.step) } });
}

function readOptim(bytes: Uint8Array, file: string): OptimState {
  const parsed = parseSafetensors(bytes, { file });
  const byName = new Map(parsed.tensors.map((t) => [t.name, t]));
  const list = (p: string) => {
    const out: Float32Array[] = [];
    for (let i = 0; byName.has(`${p}.${i}`); i++) {
      out.push(new Float32Array(byName.get(`${p}.${i}`)!.bytes.slice().buffer));
    }
    return out;
  };
  const step = Number(parsed.metadata.step);
  if (!Number.isInteger(step)) throw new Error(`${file}: metadata "step" is missing`);
  return { step, m: list("m"), v: list("v") };
}

/** The saved run of this origin; every method works on `webrl-run/` in OPFS. */
export class RunStore {
  private constructor(readonly root: Dir) {}

  /** The store, or null where this browser has no OPFS. */
  static async open(): Promise<RunStore | null> {
    const storage = (navigator as Navigator & { storage?: StorageManager }).storage;
    if (!storage?.getDirectory) return null;
    try {
      const top = await storage.getDirectory();
      return new RunStore(await top.getDirectoryHandle(ROOT, { create: true }));
    } catch {
      return null;
    }
  }

  /** The saved run with a complete checkpoint, or null. */
  async saved(): Promise<SavedRunInfo | null> {
    try {
      const latest = await readJson<{ step: number }>(this.root, "latest.json");
      const m = await readJson<RunManifest>(this.root, "run.json");
      return {
        step: latest.step,
        totalSteps: m.totalSteps,
        savedAt: m.savedAt,
        settings: m.settings,
        model: m.model,
        data: m.data,
      };
    } catch {
      return null;
    }
  }

  /** Removes everything saved. */
  async clear(): Promise<void> {
    for await (const name of (this.root as Dir & { keys(): AsyncIterable<string> }).keys()) {
      await this.root.removeEntry(name, { recursive: true });
    }
  }

  /** Starts a new saved run: clears the old one, then writes what a resume rebuilds from. */
  async begin(m: RunManifest, base: Record<string, Uint8Array>, rows: PromptRows): Promise<void> {
    await this.clear();
    const dir = await this.root.getDirectoryHandle("base", { create: true });
    for (const [name, bytes] of Object.entries(base)) await writeFile(dir, name, bytes);
    await writeFile(this.root, "rows.json", JSON.stringify(rows));
    await writeFile(this.root, "run.json", JSON.stringify(m));
  }

  /** Writes `global_step_N/`, then points latest.json at it, then drops older checkpoints. */
  async writeCheckpoint(c: Checkpoint): Promise<void> {
    const name = `global_step_${c.step}`;
    await this.root.removeEntry(name, { recursive: true }).catch(() => {});
    const dir = await this.root.getDirectoryHandle(name, { create: true });
    await writeFile(dir, "actor.safetensors", tensorsFile(c.actor));
    await writeFile(dir, "actor_optim.safetensors", optimFile(c.actorOptim));
    if (c.critic && c.criticOptim) {
      await writeFile(dir, "critic.safetensors", tensorsFile(c.critic));
      await writeFile(dir, "critic_optim.safetensors", optimFile(c.criticOptim));
    }
    await writeFile(dir, "extra_state.json", JSON.stringify(c.extra));
    await writeFile(dir, "metrics.json", JSON.stringify(c.metrics));
    await writeFile(this.root, "latest.json", JSON.stringify({ step: c.step }));
    for await (const entry of (this.root as Dir & { keys(): AsyncIterable<string> }).keys()) {
      if (entry.startsWith("global_step_") && entry !== name) {
        await this.root.removeEntry(entry, { recursive: true });
      }
    }
  }

  async manifest(): Promise<RunManifest> {
    return await readJson<RunManifest>(this.root, "run.json");
  }

  /** The starting model folder's files by name. */
  async baseFiles(): Promise<Record<string, Uint8Array>> {
    const dir = await this.root.getDirectoryHandle("base");
    const out: Record<string, Uint8Array> = {};
    for await (const name of (dir as Dir & { keys(): AsyncIterable<string> }).keys()) {
      out[name] = await readBytes(dir, name);
    }
    return out;
  }

  async rows(): Promise<PromptRows> {
    return await readJson<PromptRows>(this.root, "rows.json");
  }

  /** The latest complete checkpoint. */
  async checkpoint(): Promise<Checkpoint> {
    const { step } = await readJson<{ step: number }>(this.root, "latest.json");
    const dir = await this.root.getDirectoryHandle(`global_step_${step}`);
    const at = (f: string) => `OPFS ${ROOT}/global_step_${step}/${f}`;
    const has = async (f: string) => await dir.getFileHandle(f).then(() => true, () => false);
    const critic = await has("critic.safetensors");
    return {
      step,
      actor: readTensors(await readBytes(dir, "actor.safetensors"), at("actor.safetensors")),
      actorOptim: readOptim(await readBytes(dir, "actor_optim.safetensors"), at("actor_optim")),
      critic: critic
        ? readTensors(await readBytes(dir, "critic.safetensors"), at("critic.safetensors"))
        : null,
      criticOptim: critic
        ? readOptim(await readBytes(dir, "critic_optim.safetensors"), at("critic_optim"))
        : null,
      extra: await readJson<Record<string, unknown>>(dir, "extra_state.json"),
      metrics: await readJson<MetricPoint[]>(dir, "metrics.json"),
    };
  }
}
