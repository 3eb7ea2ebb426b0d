import { gpu, packParams } from "../../gpu/mod.ts";
import { isGradEnabled, record, registerOp } from "../autograd.ts";
import { fmtShape, Tensor } from "../tensor.ts";
import { zeros } from "./basic.ts";
import { grid1d } from "./grid.ts";

const WG = 256;

registerOp(
  "embedding",
  "ids i32 [...], table [V, C] -> table rows [..., C] (ids clamped to [0, V)); grad for the " +
    "table by a deterministic scatter-add (repeated ids add up in position order)",
);

function check(ids: Tensor, table: Tensor): void {
  // Described only on failure: the lookup runs at every decode step.
  const desc = () =>
    `ids ${fmtShape(ids.shape)} ${ids.dtype}, table ${fmtShape(table.shape)} ${table.dtype}`;
  if (ids.dtype !== "i32") throw new Error(`embedding: ids must be i32, got ${desc()}`);
  if (table.rank !== 2 || table.shape[0] < 1) {
    throw new Error(`embedding: table must be [V, C] with V >= 1, got ${desc()}`);
  }
  if (table.dtype !== "f32" && table.dtype !== "f16") {
    throw new Error(`embedding: table must be f32 (or f16), got ${desc()}`);
  }
  if (table.dtype === "f16" && !gpu().hasF16) {
    throw new Error(
      `embedding: an f16 table needs shader-f16, which this adapter lacks (${desc()})`,
    );
  }
  if (table.dtype === "f16" && table.requiresGrad && isGradEnabled()) {
    throw new Error(`embedding: an f16 table is for inference and takes no gradient (${desc()})`);
  }
}

/**
 * Uploads CPU token ids as an i32 tensor after checking that each one is an integer in
 * [0, vocabSize): the kernels clamp stray ids silently, so ids from the CPU are checked here.
 */
export function embeddingIds(
  ids: ArrayLike<number>,
  shape: readonly number[],
  vocabSize: number,
): Tensor {
  for (let i = 0; i < ids.length; i++) {
    const v = ids[i];
    if (!Number.isInteger(v) || v < 0 || v >= vocabSize) {
      throw new Error(
        `embedding: id ${v} at index ${i} of ids ${fmtShape(shape)} is outside the ` +
          `vocabulary [0, ${vocabSize})`,
      );
    }
  }
  return Tensor.from(ids, shape, "i32", "ids");
}

/**
 * Gathers rows of table [V, C] for ids [...] into [..., C] (same dtype as the table). Ids outside
 * [0, V) are clamped to the nearest row on the GPU; use `embeddingIds` to reject them up front.
 * The table's gradient is a dense [V, C] f32 tensor, zero where no id points.
 */
export function embedding(ids: Tensor, table: Tensor): Tensor {
  check(ids, table);
  const [V, C] = table.shape;
  const rows = ids.size;
  const out = Tensor.empty([...ids.shape, C], table.dtype, "embedding");
  const f16 = table.dtype === "f16";
  gpu().dispatch({
    shader: "embedding",
    entry: "gather",
    f16,
    defines: f16 ? { WG, T: "f16" } : { WG },
  }, {
    params: packParams([rows, C, V]),
    buffers: [ids.buffer, table.buffer, out.buffer],
    workgroups: grid1d(rows * C, WG),
  });
  return record("embedding", [ids, table], out, (g) => [null, embeddingBackward(ids, g, V, C)]);
}

function embeddingBackward(ids: Tensor, g: Tensor, V: number, C: number): Tensor {
  const rows = ids.size;
  const gTable = zeros([V, C], "embedding.grad");
  if (rows === 0 || C === 0) return gTable;
  const next = Tensor.empty([rows], "u32", "embedding.next");
  const hasPrev = zeros([rows], "embedding.has_prev"); // 0.0f has the bits of 0u
  const params = packParams([rows, C, V]);
  const dev = gpu();
  dev.dispatch({ shader: "embedding", entry: "link", defines: { WG } }, {
    params,
    buffers: [ids.buffer, next.buffer, hasPrev.buffer],
    workgroups: grid1d(rows, WG),
  });
  dev.dispatch({ shader: "embedding", entry: "scatter", defines: { WG } }, {
    params,
    buffers: [ids.buffer, next.buffer, hasPrev.buffer, g.buffer, gTable.buffer],
    workgroups: grid1d(rows * C, WG),
  });
  next.dispose();
  hasPrev.dispose();
  return gTable;
}
