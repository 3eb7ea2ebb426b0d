/**
 * WGSL sources live in `shaders/*.wgsl`. Deno reads them from disk on first use; the browser bundle
 * registers them up front (the esbuild build inlines every file), so kernels never carry WGSL in TS.
 */
const sources = new Map<string, string>();

/** Registers shader sources by name (file name without `.wgsl`); used by the browser bundle. */
export function registerShaderSources(map: Record<string, string>): void {
  for (const [name, code] of Object.entries(map)) sources.set(name, code);
}

/** Returns the WGSL text of `shaders/<name>.wgsl`. */
export function shaderSource(name: string): string {
  const cached = sources.get(name);
  if (cached !== undefined) return cached;
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  if (!deno) {
    throw new Error(`shader "${name}" is not registered (the browser bundle must register it)`);
  }
  const url = new URL(`../../shaders/${name}.wgsl`, import.meta.url);
  let code: string;
  try {
    code = deno.readTextFileSync(url);
  } catch (e) {
    throw new Error(`cannot read shader ${url.pathname}: ${(e as Error).message}`);
  }
  sources.set(name, code);
  return code;
}

/** Values that specialise a shader: `const NAME ... = v;` and `alias NAME = T;` are rewritten. */
export type Defines = Record<string, number | string | boolean>;

/**
 * Rewrites module-scope `const NAME: T = ...;` / `alias NAME = ...;` declarations with the given
 * values. Plain text substitution keeps every specialisation valid WGSL on every implementation
 * (override constants cannot size workgroup arrays everywhere).
 */
export function specialize(code: string, name: string, defines: Defines = {}): string {
  let out = code;
  for (const [key, value] of Object.entries(defines)) {
    const constRe = new RegExp(`(^|\\n)(\\s*const\\s+${key}\\s*(?::\\s*\\w+)?\\s*=)[^;]*;`);
    const aliasRe = new RegExp(`(^|\\n)(\\s*alias\\s+${key}\\s*=)[^;]*;`);
    if (constRe.test(out)) {
      out = out.replace(constRe, `$1$2 ${value};`);
    } else if (aliasRe.test(out)) {
      out = out.replace(aliasRe, `$1$2 ${value};`);
    } else {
      throw new Error(`shader "${name}" has no 'const ${key}' or 'alias ${key}' to specialise`);
    }
  }
  return out;
}
