/**
 * WGSL sources live in `shaders/*.wgsl` (never in TS strings). Deno reads them from disk on first
 * use; the browser bundle registers them up front (web/build.ts inlines `shaderSource(name)` of
 * every shader), so both run the same include expansion and see the same text.
 *
 * How to share code and constants (wgsl_directives.ts does the work):
 * - Code several shaders need goes in `shaders/include/<topic>.wgsl`, pulled in with a line
 *   `#include "<topic>.wgsl"` (paths are relative to shaders/include/; each file is pasted once
 *   per shader). An include may use names its includers declare (WG, a binding): its header says
 *   which. Include files are not shaders: nothing dispatches them and they need no TS op.
 * - A number both the TS op and the WGSL need (a workgroup size, a tile) is declared in WGSL as
 *   `#const WG: u32` with no value, and the op passes it in its kernel spec:
 *   `gpu().dispatch({ shader: "swiglu", entry: "forward", defines: { WG } }, ...)` with
 *   `const WG = 256;` beside `grid1d(n, WG)` in the TS. A number becomes a typed literal (`256u`);
 *   a missing value is an error naming the shader, so the two sides cannot disagree. Values that
 *   have a sensible default (a dtype alias, an op switch) stay `const X: u32 = 0u;` /
 *   `alias T = f32;`, which a define overrides. Defines are part of the pipeline cache key.
 * - A hot loop of fixed length that the GPU's compiler would keep as a loop (matmul_tile.wgsl's k
 *   steps) is written once between `#unroll k 8` and `#end`: the lines come out eight times with
 *   `$k` replaced by 0 .. 7 (`acc$k` names acc0 .. acc7). Guard copies past a #const bound with
 *   `if ($k < N) { ... }`: the test is constant and compiles away. Leave no loop around the
 *   copies, even one of a single trip: NVIDIA's compiler then scheduled them worse.
 * - Lines that only some specialisations want (matmul_tile.wgsl's place for the next stage's
 *   reads, its causal block rules) go between `#if NAME == VALUE` (or `!=`) and `#endif`, NAME a
 *   `#const`: they are dropped where its value differs (or not), so no dead copy reaches the GPU's
 *   compiler (which, on CPU adapters, pays for dead code too), and code naming fields that only
 *   some includers declare compiles in those only.
 */
import { type Defines, expandIncludes, INCLUDE_DIR, specialize } from "./wgsl_directives.ts";

export { type Defines, specialize };

const registered = new Map<string, string>();
const expanded = new Map<string, string>();

/** Registers include-expanded shader sources by name (the browser bundle's `SHADERS`). */
export function registerShaderSources(map: Record<string, string>): void {
  for (const [name, code] of Object.entries(map)) registered.set(name, code);
}

function denoApi(): typeof Deno | undefined {
  return (globalThis as { Deno?: typeof Deno }).Deno;
}

const SHADERS_URL = new URL("../../shaders/", import.meta.url);

/** Reads `shaders/<path>` from disk; undefined when the file does not exist. */
function readFromDisk(path: string): string | undefined {
  const deno = denoApi()!;
  try {
    return deno.readTextFileSync(new URL(path, SHADERS_URL));
  } catch (e) {
    if (e instanceof deno.errors.NotFound) return undefined;
    throw new Error(`cannot read shader file shaders/${path}: ${(e as Error).message}`);
  }
}

/** Returns the WGSL text of `shaders/<name>.wgsl` with its includes expanded (`#const` left). */
export function shaderSource(name: string): string {
  const known = registered.get(name) ?? expanded.get(name);
  if (known !== undefined) return known;
  if (!denoApi()) {
    throw new Error(`shader "${name}" is not registered (the browser bundle must register it)`);
  }
  const code = expandIncludes(name, readFromDisk);
  expanded.set(name, code);
  return code;
}

/** Names of every shader in shaders/ (Deno only): the bundle's list, include files excluded. */
export function shaderNames(): string[] {
  const deno = denoApi();
  if (!deno) throw new Error("shaderNames() reads shaders/ from disk: Deno only");
  return [...deno.readDirSync(SHADERS_URL)]
    .filter((e) => e.isFile && e.name.endsWith(".wgsl"))
    .map((e) => e.name.slice(0, -".wgsl".length))
    .sort();
}

/** Paths under shaders/ of every include file (Deno only), for checks that each is used. */
export function includeFiles(): string[] {
  const deno = denoApi();
  if (!deno) throw new Error("includeFiles() reads shaders/ from disk: Deno only");
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of deno.readDirSync(new URL(`${dir}/`, SHADERS_URL))) {
      if (e.isDirectory) walk(`${dir}/${e.name}`);
      else if (e.name.endsWith(".wgsl")) out.push(`${dir}/${e.name}`);
    }
  };
  try {
    walk(INCLUDE_DIR);
  } catch (e) {
    if (!(e instanceof deno.errors.NotFound)) throw e;
  }
  return out.sort();
}

/** The reader shaderSource uses in Deno, for tools that walk the include graph. */
export const readShaderFile: (path: string) => string | undefined = readFromDisk;
