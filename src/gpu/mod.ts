export type { Binding } from "./types.ts";
export { type DispatchOptions, Gpu, gpu, type GpuOptions, initGpu } from "./device.ts";
export { packParams, paramBytes, type ParamField, type Params } from "./params.ts";
export { formatBytes, GpuError } from "./errors.ts";
export { BufferPool } from "./buffer_pool.ts";
export { kernelKey, type KernelSpec, PipelineCache } from "./pipelines.ts";
export {
  type Defines,
  includeFiles,
  readShaderFile,
  registerShaderSources,
  shaderNames,
  shaderSource,
  specialize,
} from "./shader_source.ts";
export { expandIncludes, includesOf, type ShaderReader } from "./wgsl_directives.ts";
export { type GpuGap, type GpuGaps, gpuGaps, type KernelTotal, kernelTotals } from "./gaps.ts";
export type { KernelSpan } from "./recorder.ts";
