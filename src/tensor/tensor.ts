import { gpu } from "../gpu/mod.ts";
import { trackTensor, untrackTensor } from "./scope.ts";
import { isGradEnabled } from "./grad_mode.ts";
import { f16ToF32Into, f32ToF16Into } from "./half.ts";

export type DType = "f32" | "f16" | "i32" | "u32";
export const DTYPE_BYTES: Record<DType, number> = { f32: 4, f16: 2, i32: 4, u32: 4 };
export type TypedArray = Float32Array | Int32Array | Uint32Array | Uint16Array;

/** Reference-counted GPU buffer shared by a tensor and its reshaped views. */
class Storage {
  refs = 1;
  /** Writes to the buffer since it was made (see Tensor.version). */
  version = 0;
  constructor(public buffer: GPUBuffer | null, readonly bytes: number) {}
}

let nextId = 1;

/** One op on the autograd tape: its inputs and how to turn the output's gradient into theirs. */
export interface Node {
  name: string;
  inputs: readonly Tensor[];
  /** Gradients for each input (null where an input needs none). */
  backward: (gradOut: Tensor) => (Tensor | null)[];
  /** Set on every output of an op with several outputs (then `backward` is not called). */
  group?: NodeGroup;
}

/** The outputs of one op with several outputs, whose gradients reach one backward together. */
export interface NodeGroup {
  outputs: readonly Tensor[];
  /** Gradients for each input from the outputs' (null for an output that got none). */
  backward: (gradOuts: (Tensor | null)[]) => (Tensor | null)[];
}

export function shapeSize(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 0) throw new Error(`invalid shape [${shape}]: bad dim ${d}`);
    n *= d;
  }
  return n;
}

export function fmtShape(shape: readonly number[]): string {
  return `[${shape.join(", ")}]`;
}

/** Whether two shapes are equal, dim by dim. */
export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * A GPU buffer view with a shape and a dtype. Tensors created inside `scope()` are released when
 * the scope ends unless returned or `keep()`-ed; parameters are kept for their whole life.
 */
export class Tensor {
  readonly id = nextId++;
  readonly size: number;
  requiresGrad = false;
  grad: Tensor | null = null;
  /** The autograd node that produced this tensor (null for leaves and after backward). */
  node: Node | null = null;
  #storage: Storage;
  #disposed = false;

  private constructor(
    readonly shape: readonly number[],
    readonly dtype: DType,
    storage: Storage,
    readonly label: string,
  ) {
    this.size = shapeSize(shape);
    this.#storage = storage;
    trackTensor(this);
  }

  /** An uninitialised tensor (contents are whatever the pooled buffer held). */
  static empty(shape: readonly number[], dtype: DType = "f32", label = "tensor"): Tensor {
    const bytes = shapeSize(shape) * DTYPE_BYTES[dtype];
    const g = gpu();
    g.checkBinding(bytes, () => `tensor "${label}" ${fmtShape(shape)} ${dtype}`);
    return new Tensor([...shape], dtype, new Storage(g.pool.acquire(bytes, label), bytes), label);
  }

  /** Uploads typed-array data; f16 tensors take a Float32Array and are converted on the CPU. */
  static from(
    data: ArrayLike<number> | TypedArray,
    shape: readonly number[],
    dtype: DType = "f32",
    label = "tensor",
  ): Tensor {
    const n = shapeSize(shape);
    if (data.length !== n) {
      throw new Error(
        `Tensor.from: ${data.length} values do not fill shape ${fmtShape(shape)} (${n} elements)`,
      );
    }
    const t = Tensor.empty(shape, dtype, label);
    if (n > 0) gpu().upload(t.buffer, toDtypeArray(data, dtype));
    return t;
  }

  /**
   * How many times the buffer was written after it was made, as torch's `_version`: `write` and
   * every in-place op bump it (`markWritten`); a view shares it with its base. What is derived
   * from the values and kept (an f16 copy of a weight) is valid while the version it was made at
   * is the current one.
   */
  get version(): number {
    return this.#storage.version;
  }

  /** Records a write to the buffer (an in-place kernel's, recorded or dispatched now). */
  markWritten(): void {
    this.buffer; // throws when disposed
    this.#storage.version++;
  }

  /** Replaces the values with `data` (same element count; f16 converted on the CPU). */
  write(data: ArrayLike<number> | TypedArray): void {
    if (data.length !== this.size) {
      throw new Error(
        `${this}.write: ${data.length} values do not fill ${fmtShape(this.shape)} (${this.size})`,
      );
    }
    if (this.size > 0) gpu().upload(this.buffer, toDtypeArray(data, this.dtype));
    this.markWritten();
  }

  get buffer(): GPUBuffer {
    const b = this.#storage.buffer;
    if (this.#disposed || !b) {
      throw new Error(`tensor "${this.label}" ${fmtShape(this.shape)} used after dispose`);
    }
    return b;
  }

  get byteSize(): number {
    return this.size * DTYPE_BYTES[this.dtype];
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  get rank(): number {
    return this.shape.length;
  }

  /** A view with another shape over the same buffer. */
  reshape(shape: readonly number[]): Tensor {
    const resolved = resolveShape(shape, this.size, this.shape);
    this.buffer; // throws when disposed
    this.#storage.refs++;
    const view = new Tensor(resolved, this.dtype, this.#storage, this.label);
    if (this.requiresGrad && isGradEnabled()) {
      // A view is an op like any other on the tape: its gradient is the same values reshaped.
      view.requiresGrad = true;
      view.node = { name: "reshape", inputs: [this], backward: (g) => [g.reshape(this.shape)] };
    }
    return view;
  }

  /** Reads the values back (one GPU round trip; keep it out of inner loops). */
  async toArray(): Promise<Float32Array | Int32Array | Uint32Array> {
    const [bytes] = await gpu().read([{ buffer: this.buffer, size: this.byteSize }]);
    return fromBytes(bytes, this.dtype);
  }

  /** Removes the tensor from the enclosing scope so it outlives it. */
  keep(): this {
    untrackTensor(this);
    return this;
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.node = null;
    untrackTensor(this);
    const s = this.#storage;
    if (--s.refs === 0 && s.buffer) {
      gpu().pool.release(s.buffer);
      s.buffer = null;
    }
  }

  toString(): string {
    return `Tensor(${fmtShape(this.shape)}, ${this.dtype}, "${this.label}")`;
  }
}

function resolveShape(shape: readonly number[], size: number, from: readonly number[]): number[] {
  const out = [...shape];
  const infer = out.indexOf(-1);
  if (infer >= 0) {
    const rest = out.reduce((a, d, i) => i === infer ? a : a * d, 1);
    out[infer] = rest === 0 ? 0 : size / rest;
  }
  if (shapeSize(out) !== size) {
    throw new Error(`cannot reshape ${fmtShape(from)} (${size} elements) to ${fmtShape(shape)}`);
  }
  return out;
}

export function toDtypeArray(data: ArrayLike<number>, dtype: DType): TypedArray {
  switch (dtype) {
    case "f32":
      return data instanceof Float32Array ? data : Float32Array.from(data);
    case "i32":
      return data instanceof Int32Array ? data : Int32Array.from(data);
    case "u32":
      return data instanceof Uint32Array ? data : Uint32Array.from(data);
    case "f16": {
      const out = new Uint16Array(data.length);
      f32ToF16Into(data instanceof Float32Array ? data : Float32Array.from(data), out);
      return out;
    }
  }
}

function fromBytes(bytes: ArrayBuffer, dtype: DType): Float32Array | Int32Array | Uint32Array {
  switch (dtype) {
    case "f32":
      return new Float32Array(bytes);
    case "i32":
      return new Int32Array(bytes);
    case "u32":
      return new Uint32Array(bytes);
    case "f16": {
      const h = new Uint16Array(bytes);
      const out = new Float32Array(h.length);
      f16ToF32Into(h, out);
      return out;
    }
  }
}
