import { type Defines, shaderSource, specialize } from "./shader_source.ts";

/** What identifies a compute pipeline: shader file, entry point and specialisation values. */
export interface KernelSpec {
  shader: string; // file name in shaders/, without .wgsl
  entry?: string; // default "main"
  defines?: Defines;
  f16?: boolean; // prepend `enable f16;`
}

/** The f16 flag and every define, sorted: each of them changes the compiled WGSL. */
function variantKey(spec: KernelSpec): string {
  const defs = Object.entries(spec.defines ?? {}).sort(([a], [b]) => a < b ? -1 : 1)
    .map(([k, v]) => `${k}=${v}`).join(",");
  return `${spec.f16 ? "f16" : ""}:${defs}`;
}

/** The pipeline cache key; shader and entry come first because the profiler groups by them. */
export function kernelKey(spec: KernelSpec): string {
  return `${spec.shader}:${spec.entry ?? "main"}:${variantKey(spec)}`;
}

/** Creates each (shader, entry, defines) pipeline once; modules are shared between entries. */
export class PipelineCache {
  #pipelines = new Map<string, GPUComputePipeline>();
  #modules = new Map<string, GPUShaderModule>();
  /**
   * The same pipelines by the spec as written (defines in the caller's order): a lookup per
   * dispatch, several times cheaper than sorting the defines into `kernelKey`.
   */
  #literal = new Map<string, GPUComputePipeline>();

  constructor(private readonly device: GPUDevice) {}

  get size(): number {
    return this.#pipelines.size;
  }

  get(spec: KernelSpec): GPUComputePipeline {
    const literal = `${spec.shader}|${spec.entry ?? "main"}|${spec.f16 === true}|` +
      JSON.stringify(spec.defines ?? null);
    let p = this.#literal.get(literal);
    if (!p) this.#literal.set(literal, p = this.#create(spec));
    return p;
  }

  #create(spec: KernelSpec): GPUComputePipeline {
    const key = kernelKey(spec);
    let p = this.#pipelines.get(key);
    if (p) return p;
    const modKey = `${spec.shader}:${variantKey(spec)}`; // one module serves every entry
    let module = this.#modules.get(modKey);
    if (!module) {
      let code = specialize(shaderSource(spec.shader), spec.shader, spec.defines);
      if (spec.f16) code = `enable f16;\n${code}`;
      module = this.device.createShaderModule({ code, label: spec.shader });
      this.#modules.set(modKey, module);
    }
    p = this.device.createComputePipeline({
      layout: "auto",
      compute: { module, entryPoint: spec.entry ?? "main" },
      label: key,
    });
    this.#pipelines.set(key, p);
    return p;
  }
}
