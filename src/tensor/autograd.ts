/**
 * The autograd tape: ops `record` a backward on their output, `backward` walks the recorded graph
 * in reverse. Nothing below this file imports it (Tensor keeps its `Node` type itself and the
 * grad-mode flag lives in grad_mode.ts), so the tape can use the basic kernels freely.
 */
import { fmtShape, type Tensor } from "./tensor.ts";
import { accumulate, clone, fill } from "./ops/basic.ts";
import { isGradEnabled, noGrad } from "./grad_mode.ts";

// Ops import the grad-mode helpers with `record` from here.
export { isGradEnabled, noGrad, noGradAsync } from "./grad_mode.ts";

/** The registry of differentiable primitives (name -> doc); ops add themselves on import. */
export const OPS = new Map<string, string>();

export function registerOp(name: string, doc: string): void {
  OPS.set(name, doc);
}

/**
 * Attaches a backward to `out` when the tape is on and an input needs a gradient. Returns `out`, so
 * an op ends with `return record("name", [a, b], out, (g) => [...])`.
 */
export function record(
  name: string,
  inputs: readonly Tensor[],
  out: Tensor,
  backward: (gradOut: Tensor) => (Tensor | null)[],
): Tensor {
  if (isGradEnabled() && inputs.some((t) => t.requiresGrad)) {
    out.requiresGrad = true;
    out.node = { name, inputs, backward };
  }
  return out;
}

function topoOrder(roots: Tensor[]): Tensor[] {
  const order: Tensor[] = [];
  const seen = new Set<Tensor>();
  const stack: [Tensor, boolean][] = roots.map((r) => [r, false]);
  while (stack.length) {
    const [t, done] = stack.pop()!;
    if (done) {
      order.push(t);
      continue;
    }
    if (seen.has(t)) continue;
    seen.add(t);
    stack.push([t, true]);
    for (const i of t.node?.inputs ?? []) {
      if (i.requiresGrad && !seen.has(i)) stack.push([i, false]);
    }
  }
  return order; // inputs before outputs
}

/**
 * Back-propagates from `loss` (a scalar unless `gradSeed` is given). Leaf tensors with
 * `requiresGrad` accumulate into `.grad` (so micro-batches add up until the optimizer zeroes them);
 * intermediate gradients are released as soon as their node has run, and the graph is cut.
 */
export function backward(loss: Tensor | Tensor[], gradSeed?: Tensor | Tensor[]): void {
  const roots = Array.isArray(loss) ? loss : [loss];
  const seeds = gradSeed === undefined ? [] : Array.isArray(gradSeed) ? gradSeed : [gradSeed];
  const grads = new Map<Tensor, Tensor>();
  roots.forEach((root, i) => {
    if (!root.requiresGrad) throw new Error(`backward: ${root} does not require grad`);
    const seed = seeds[i];
    if (!seed && root.size !== 1) {
      throw new Error(`backward: loss must be a scalar, got shape ${fmtShape(root.shape)}`);
    }
    if (seed && seed.size !== root.size) {
      throw new Error(
        `backward: seed ${fmtShape(seed.shape)} does not match ${fmtShape(root.shape)}`,
      );
    }
    grads.set(root, seed ? clone(seed) : fill(root.shape, 1));
  });
  const order = topoOrder(roots);
  try {
    noGrad(() => runTape(order, grads));
  } finally {
    for (const g of grads.values()) g.dispose();
  }
}

/** Runs the recorded backwards in reverse topological order (with the tape off). */
function runTape(order: Tensor[], grads: Map<Tensor, Tensor>): void {
  for (let k = order.length - 1; k >= 0; k--) {
    const t = order[k];
    const g = grads.get(t);
    if (!g) continue;
    grads.delete(t);
    if (!t.node) {
      accumulateLeaf(t, g);
      continue;
    }
    const node = t.node;
    const inGrads = node.backward(g);
    // A backward may pass g through or return one tensor for several inputs: store each
    // tensor once, clone on reuse, and dispose only what nothing holds.
    const stored = new Set<Tensor>();
    const spent = new Set<Tensor>([g]);
    node.inputs.forEach((input, i) => {
      const gi = inGrads[i];
      if (!gi) return;
      if (!input.requiresGrad) return void spent.add(gi);
      checkGradShape(node.name, input, gi);
      const prevG = grads.get(input);
      if (prevG) {
        accumulate(prevG, gi);
        spent.add(gi);
      } else if (stored.has(gi)) grads.set(input, clone(gi));
      else {
        grads.set(input, gi);
        stored.add(gi);
      }
    });
    for (const d of spent) if (!stored.has(d)) d.dispose();
    t.node = null;
  }
}

function checkGradShape(op: string, input: Tensor, g: Tensor): void {
  if (g.size !== input.size) {
    throw new Error(
      `backward of ${op}: gradient ${fmtShape(g.shape)} does not match input ${input}`,
    );
  }
}

function accumulateLeaf(t: Tensor, g: Tensor): void {
  if (t.grad) {
    accumulate(t.grad, g);
    g.dispose();
  } else {
    t.grad = (g.shape.length === t.shape.length ? g : g.reshape(t.shape)).keep();
    if (t.grad !== g) g.dispose();
  }
}

/** Drops the gradients of the given tensors (the optimizer calls it after a step). */
export function zeroGrad(params: Iterable<Tensor>): void {
  for (const p of params) {
    p.grad?.dispose();
    p.grad = null;
  }
}
