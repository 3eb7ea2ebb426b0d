/**
 * Which attention kernels run and with which blocks: the row kernels (attention_fwd,
 * attention_bwd_dq, attention_bwd_dkv: one thread group per query row or key) and the
 * register-tiled ones (attention_tiled_*: each thread owns a block of the score tile). The one
 * home of every tile size and of `attentionPolicy`, which benchmarks and tests may set.
 */
import { gpu } from "../../gpu/mod.ts";

/**
 * Blocks of a register-tiled kernel: `bq` query rows and `bk` keys per block, `ty` x `tx`
 * threads. attention_tiled_fwd / _dq: a workgroup owns bq rows and walks keys bk at a time, a
 * thread owns rows ty + i * ty_count and keys tx + j * tx_count. attention_tiled_dkv: a workgroup
 * owns bk keys and walks rows bq at a time; `ty` runs along keys, `tx` along rows.
 * Output columns (vec4 groups) are split over `tx` in all three.
 */
export interface AttentionTile {
  bq: number;
  bk: number;
  ty: number;
  tx: number;
}

export type TiledKernel = "fwd" | "dq" | "dkv";

/**
 * Kernel and tile choice. Mutable for benchmarks and tests. The row kernels are the default: on an
 * H100 (bench/attention_device.ts, B 16, T 384, Hq 14, Hkv 2, D 64, causal) the tiled ones took
 * 3.13 ms forward and 15.7 ms forward + backward against the row kernels' 2.79 and 13.2 (T 1024:
 * 92 against 79 ms), with no tile variant faster.
 */
export const attentionPolicy: {
  /**
   * true: tiled kernels wherever a tile fits the adapter; false: row kernels only; "auto": tiled
   * on GPUs, row kernels on CPU adapters (they gain nothing from big tiles, and compile large
   * workgroup arrays slowly).
   */
  tiled: boolean | "auto";
  /** Force these tiles, on any adapter unless `tiled` is false (else the first CANDIDATE that fits). */
  fwd?: AttentionTile;
  dq?: AttentionTile;
  dkv?: AttentionTile;
  /** Fewest query rows (T x query heads per kv head) for the tiled forward; default its bq. */
  minRows?: number;
} = { tiled: false };

/** Candidate tiles per kernel, best first (the first that fits the adapter is taken). */
export const CANDIDATES: Record<TiledKernel, AttentionTile[]> = {
  fwd: [
    { bq: 64, bk: 32, ty: 16, tx: 16 },
    { bq: 32, bk: 16, ty: 8, tx: 16 },
    { bq: 16, bk: 16, ty: 4, tx: 16 },
    { bq: 8, bk: 8, ty: 4, tx: 8 },
  ],
  dq: [
    { bq: 32, bk: 32, ty: 8, tx: 16 },
    { bq: 16, bk: 16, ty: 4, tx: 16 },
    { bq: 16, bk: 8, ty: 4, tx: 8 },
  ],
  dkv: [
    { bq: 32, bk: 32, ty: 8, tx: 16 },
    { bq: 16, bk: 16, ty: 4, tx: 16 },
    { bq: 8, bk: 16, ty: 4, tx: 8 },
  ],
};

/** Workgroup memory of a tiled kernel in bytes (mirrors the shaders' workgroup arrays). */
export function tiledSharedBytes(kernel: TiledKernel, t: AttentionTile, D: number): number {
  const dp = Math.ceil(D / 4) + 1; // padded row of vec4 column groups
  switch (kernel) {
    case "fwd":
      return 16 * dp * (t.bq + 2 * t.bk) + 4 * t.bk + 16 * t.bq * (t.bk / 4 + 1) + 4 * t.bq * t.tx;
    case "dq":
      return 16 * dp * (2 * t.bq + 2 * t.bk) + 4 * t.bk + 16 * t.bq * (t.bk / 4 + 1);
    case "dkv":
      return 16 * dp * (2 * t.bq + 2 * t.bk) + 32 * t.bk * (t.bq / 4 + 1) + 12 * t.bq;
  }
}

/** Why `t` cannot run `kernel` at head size D on this adapter, or null when it can. */
export function tileProblem(kernel: TiledKernel, t: AttentionTile, D: number): string | null {
  const lim = gpu().limits;
  const [rows, keys] = kernel === "dkv" ? [t.bk, t.bq] : [t.bq, t.bk];
  const ok = [t.bq, t.bk, t.ty, t.tx].every((x) => Number.isInteger(x) && x > 0);
  if (!ok) return "sizes must be positive integers";
  if (rows % t.ty !== 0 || keys % t.tx !== 0) {
    return kernel === "dkv"
      ? "bk must be a multiple of ty, bq of tx"
      : "bq must be a multiple of ty, bk of tx";
  }
  if (t.bk % 4 !== 0 && kernel !== "dkv") return "bk must be a multiple of 4";
  if (t.bq % 4 !== 0 && kernel === "dkv") return "bq must be a multiple of 4";
  const wg = t.ty * t.tx;
  if (wg > lim.maxComputeInvocationsPerWorkgroup || wg > lim.maxComputeWorkgroupSizeX) {
    return `${wg} invocations exceed the adapter's limit`;
  }
  const bytes = tiledSharedBytes(kernel, t, D);
  if (bytes > lim.maxComputeWorkgroupStorageSize) {
    return `${bytes} bytes of workgroup memory exceed ${lim.maxComputeWorkgroupStorageSize}`;
  }
  return null;
}

function useTiled(): boolean {
  const t = attentionPolicy.tiled;
  return t === "auto" ? !gpu().isCpuAdapter : t;
}

/** The tile `kernel` runs with at head size D, or null for the row kernel. */
export function tiledTile(kernel: TiledKernel, D: number): AttentionTile | null {
  if (attentionPolicy.tiled === false) return null;
  const forced = attentionPolicy[kernel];
  if (forced) {
    const why = tileProblem(kernel, forced, D);
    if (why) throw new Error(`attention: tile ${JSON.stringify(forced)} for ${kernel}: ${why}`);
    return forced;
  }
  if (!useTiled()) return null;
  return CANDIDATES[kernel].find((t) => tileProblem(kernel, t, D) === null) ?? null;
}

/** The tiled forward's tile for a call of `rows` query rows, or null for the row kernel. */
export function tiledForwardTile(rows: number, D: number): AttentionTile | null {
  const t = tiledTile("fwd", D);
  return t && rows >= (attentionPolicy.minRows ?? t.bq) ? t : null;
}

const FWD_BK = 16;
const BWD_TPR = 4; // threads per query row (dq) or key (dkv) in both row backward kernels

/** Blocks of the row forward kernel: query rows, keys per block and threads per row. */
export interface RowTile {
  bq: number;
  bk: number;
  tpr: number;
}

function floatsFit(floats: number): boolean {
  return floats * 4 <= gpu().limits.maxComputeWorkgroupStorageSize;
}

/**
 * CPU adapters (llvmpipe) spend seconds compiling the zero-initialisation of large workgroup
 * arrays, and gain nothing from big tiles: give them the smallest.
 */
function smallTiles(): boolean {
  return gpu().adapter.info?.isFallbackAdapter === true;
}

/** Query rows per row-forward workgroup: small for decode-like calls, else the largest that fits. */
export function rowForwardTile(rows: number, D: number): RowTile {
  const dp = Math.ceil(D / 4) * 4;
  if (smallTiles()) return { bq: 4, bk: 4, tpr: 4 };
  for (const bq of [16, 8, 4]) {
    if (bq > 4 && rows <= bq / 2) continue;
    if (floatsFit((bq + 2 * FWD_BK) * dp + bq * FWD_BK)) {
      return { bq, bk: FWD_BK, tpr: bq >= 16 ? 4 : 8 };
    }
  }
  return { bq: 4, bk: FWD_BK, tpr: 8 };
}

/** Block size shared by both row backward kernels (query rows and keys per block), and TPR. */
export function rowBackwardTile(D: number): { tile: number; tpr: number } {
  const dp = Math.ceil(D / 4) * 4;
  if (smallTiles()) return { tile: 4, tpr: BWD_TPR };
  for (const t of [16, 8]) {
    const dq = 4 * t * dp + t * t + t * BWD_TPR;
    const dkv = 4 * t * dp + 2 * t * t + 2 * t;
    if (floatsFit(Math.max(dq, dkv))) return { tile: t, tpr: BWD_TPR };
  }
  return { tile: 4, tpr: BWD_TPR };
}
