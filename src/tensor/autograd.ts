/**
 * The autograd tape: ops `record` a backward on their output, `backward` walks the recorded graph
 * in reverse. Nothing below this file imports it (Tensor keeps its `Node` type itself and the
 * grad-mode flag lives in grad_mode.ts), so the tape can use the basic kernels freely.
 */
import { fmtShape, type Node, type NodeGroup, type Tensor } from "./tensor.ts";
import { accumulate, clone, fill, scaleInPlace } from "./ops/basic.ts";
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

/**
 * {@link record} for an op with several outputs: `backward` runs once, after every output that
 * the loss reaches has its gradient (null for one that got none), so it can be one fused kernel.
 */
export function recordMany(
  name: string,
  inputs: readonly Tensor[],
  outputs: Tensor[],
  backward: (gradOuts: (Tensor | null)[]) => (Tensor | null)[],
): Tensor[] {
  if (isGradEnabled() && inputs.some((t) => t.requiresGrad)) {
    const group: NodeGroup = { outputs, backward };
    const single = () => {
      throw new Error(`${name}: an output of a several-output op has no backward of its own`);
    };
    for (const out of outputs) {
      out.requiresGrad = true;
      out.node = { name, inputs, backward: single, group };
    }
  }
  return outputs;
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
  // A group's backward runs when the last of its outputs on this tape has been reached.
  const waiting = new Map<NodeGroup, { grads: (Tensor | null)[]; left: number }>();
  for (const t of order) {
    const group = t.node?.group;
    if (!group) continue;
    const w = waiting.get(group) ?? { grads: group.outputs.map(() => null), left: 0 };
    w.left++;
    waiting.set(group, w);
  }
  for (let k = order.length - 1; k >= 0; k--) {
    const t = order[k];
    const g = grads.get(t);
    grads.delete(t);
    const node = t.node;
    const group = node?.group;
    if (node && group) {
      t.node = null;
      const w = waiting.get(group)!;
      w.grads[group.outputs.indexOf(t)] = g ?? null;
      if (--w.left > 0 || w.grads.every((x) => !x)) continue;
      const spent = w.grads.filter((x): x is Tensor => x !== null);
      distribute(node, group.backward(w.grads), spent, grads);
      continue;
    }
    if (!g) continue;
    if (!node) {
      accumulateLeaf(t, g);
      continue;
    }
    distribute(node, node.backward(g), [g], grads);
    t.node = null;
  }
}

/** Hands a node's input gradients to the map, then disposes what nothing holds of `spentOut`. */
function distribute(
  node: Node,
  inGrads: (Tensor | null)[],
  spentOut: Tensor[],
  grads: Map<Tensor, Tensor>,
): void {
  // A backward may pass g through or return one tensor for several inputs: store each
  // tensor once, clone on reuse, and dispose only what nothing holds.
  const stored = new Set<Tensor>();
  const spent = new Set<Tensor>(spentOut);
  node.inputs.forEach((input, i) => {
    const gi = inGrads[i];
    if (!gi) return;
    if (!input.requiresGrad) return void spent.add(gi);
    checkGradShape(node.name, input, gi);
    const prevG = grads.get(input);
    // the same tensor handed to one input twice (add(x, x)): it may not be read while written
    if (prevG === gi) scaleInPlace(prevG, 2);
    else if (prevG) {
      accumulate(prevG, gi);
      spent.add(gi);
    } else if (stored.has(gi)) grads.set(input, clone(gi));
    else {
      grads.set(input, gi);
      stored.add(gi);
    }
  });
  for (const d of spent) if (!stored.has(d)) d.dispose();
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
