export {
  type DType,
  DTYPE_BYTES,
  f16BitsToF32,
  f32ToF16Bits,
  fmtShape,
  shapeSize,
  Tensor,
  type TypedArray,
} from "./tensor.ts";
export { scope, scopeAsync } from "./scope.ts";
export {
  backward,
  isGradEnabled,
  type Node,
  noGrad,
  noGradAsync,
  OPS,
  record,
  registerOp,
  zeroGrad,
} from "./autograd.ts";
export { accumulate, clone, fill, fillInPlace, scaleInPlace, zeros } from "./ops/basic.ts";
export { grid1d } from "./ops/grid.ts";
