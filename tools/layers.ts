/**
 * The layer rule of the source tree, checked by `deno task check`.
 *
 * Folders under src/ are ranked; a file may import another folder only through that folder's
 * `mod.ts`, and only a folder of strictly lower rank. Test files may also import src/testing.
 * Outside src/ (web/, test/, bench/) imports of src/ go through `mod.ts` files. No import circles,
 * no source file over 500 lines, no `any`. Rule and picture: docs/architecture.md.
 */

/** Rank of each folder under src/: imports point to lower ranks only. */
export const LAYERS: Record<string, number> = {
  gpu: 0,
  tensor: 1,
  io: 2,
  nn: 3,
  algos: 4,
  reward: 4,
  tracking: 4,
  data: 5,
  rollout: 6,
  config: 7,
  distributed: 7.5,
  trainer: 8,
  cli: 9,
};

/** The library surface: over every layer, under cli (src/cli may use it). */
export const LIBRARY = "src/mod.ts";

/** Test helpers sit just above the tensor layer and are imported by tests only. */
export const TESTING = "testing";
export const MAX_LINES = 500;

export interface SourceFile {
  path: string; // relative to the repository root, with "/"
  text: string;
}

export interface Violation {
  path: string;
  message: string;
}

const IMPORT_RE =
  /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^"'`;]*?\sfrom\s*)?["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;

/** Relative import specifiers of a file (static, re-exports and dynamic with a literal). */
export function importsOf(text: string): string[] {
  const code = stripComments(text);
  const out: string[] = [];
  for (const m of code.matchAll(IMPORT_RE)) {
    const spec = m[1] ?? m[2];
    if (spec.startsWith("./") || spec.startsWith("../")) out.push(spec);
  }
  return out;
}

/** `any` in a type position: `: any`, `= any`, `as any`, `<any>`, `any[]`, `any | T`. */
const ANY_RE = /[:=]\s*any\b|\bas\s+any\b|<\s*any\s*[,>]|\bany\s*\[\]|[|&]\s*any\b|\bany\s*[|&]/;

/** Removes // and /* comments but keeps string literals (which may hold "//"). */
export function stripComments(text: string): string {
  return text.replace(
    /("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)|\/\*[\s\S]*?\*\/|\/\/[^\n]*/g,
    (_m, str) => str ?? "",
  );
}

/** Code with comments and string contents blanked, for word searches such as `any`. */
function codeOnly(text: string): string {
  return stripComments(text).replace(
    /"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`/g,
    '""',
  );
}

export function resolve(from: string, spec: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const s of spec.split("/")) {
    if (s === "..") parts.pop();
    else if (s !== ".") parts.push(s);
  }
  return parts.join("/");
}

function folderOf(path: string): string | null {
  const m = /^src\/([^/]+)\//.exec(path);
  return m ? m[1] : null;
}

function isTestFile(path: string): boolean {
  const name = path.split("/").pop()!;
  return /_test\.ts$/.test(name) || /^test_/.test(name) || name === "testing.ts" ||
    !path.startsWith("src/");
}

/** Every violation of the rule in the given files. */
export function checkLayers(files: SourceFile[]): Violation[] {
  const out: Violation[] = [];
  const known = new Set(files.map((f) => f.path));
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const lines = f.text.split("\n").length;
    if (lines > MAX_LINES) {
      out.push({ path: f.path, message: `${lines} lines (at most ${MAX_LINES}): split the file` });
    }
    if (f.path.endsWith(".ts") && ANY_RE.test(codeOnly(f.text))) {
      out.push({ path: f.path, message: "uses `any`: name the type or use `unknown`" });
    }
    if (!f.path.endsWith(".ts")) continue;
    const edges: string[] = [];
    for (const spec of importsOf(f.text)) {
      const target = resolve(f.path, spec);
      if (known.has(target)) edges.push(target);
      const problem = checkEdge(f.path, target);
      if (problem) out.push({ path: f.path, message: `imports ${spec}: ${problem}` });
    }
    graph.set(f.path, edges);
  }
  for (const cycle of findCycles(graph)) {
    out.push({ path: cycle[0], message: `import circle: ${cycle.join(" -> ")}` });
  }
  return out;
}

/** Why an import from `from` to `target` breaks the rule, or null. */
export function checkEdge(from: string, target: string): string | null {
  const src = folderOf(from), dst = folderOf(target);
  if (target === LIBRARY) {
    return src === null || src === "cli" || isTestFile(from)
      ? null
      : `${LIBRARY} is the library surface above every layer: only cli and code outside src use it`;
  }
  if (dst === null || src === dst) return null;
  if (!(dst in LAYERS) && dst !== TESTING) return `src/${dst}/ is not a known layer`;
  if (target !== `src/${dst}/mod.ts`) return `reaches into src/${dst}/ internals; use its mod.ts`;
  if (dst === TESTING) {
    return isTestFile(from) || src === TESTING ? null : "src/testing is for tests only";
  }
  if (src === null) return null; // web/, test/, bench/, tools/ sit above every layer
  if (src === TESTING) return LAYERS[dst] <= LAYERS.tensor ? null : `testing may not import ${dst}`;
  if (!(src in LAYERS)) return `src/${src}/ is not a known layer`;
  if (LAYERS[dst] >= LAYERS[src]) {
    return `${src} (layer ${LAYERS[src]}) may not import ${dst} (layer ${LAYERS[dst]})`;
  }
  return null;
}

/** Each elementary circle found by a depth-first search, reported once from its first file. */
export function findCycles(graph: Map<string, string[]>): string[][] {
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const seen = new Set<string>();
  const visit = (node: string) => {
    state.set(node, 1);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 1) {
        const cycle = [...stack.slice(stack.indexOf(next)), next];
        const key = [...cycle.slice(0, -1)].sort().join("|");
        if (!seen.has(key)) {
          seen.add(key);
          cycles.push(cycle);
        }
      } else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 2);
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}

async function walk(dir: string, out: SourceFile[], root: string): Promise<void> {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(root + dir)];
  } catch {
    return;
  }
  for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) await walk(path, out, root);
    else if (/\.(ts|wgsl)$/.test(e.name)) {
      out.push({ path, text: await Deno.readTextFile(root + path) });
    }
  }
}

/** The project's source files: src/, shaders/, web/, test/, bench/, tools/. */
export async function projectFiles(root: string): Promise<SourceFile[]> {
  const files: SourceFile[] = [];
  for (const dir of ["src", "shaders", "web", "test", "bench", "tools"]) {
    await walk(dir, files, root);
  }
  return files;
}

if (import.meta.main) {
  const root = new URL("../", import.meta.url).pathname;
  const violations = checkLayers(await projectFiles(root));
  for (const v of violations) console.error(`${v.path}: ${v.message}`);
  if (violations.length) {
    console.error(`layers: ${violations.length} problem(s); the rule is in docs/architecture.md`);
    Deno.exit(1);
  }
  console.log("layers: ok");
}
