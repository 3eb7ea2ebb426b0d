/**
 * The directives our WGSL files may carry, and nothing else: `#include "file.wgsl"`,
 * `#const NAME: type`, `#unroll NAME COUNT` ... `#end` and `#if NAME == VALUE` (or `!=`) ...
 * `#endif` (NAME a `#const` of the shader: the lines between are kept only where its value is
 * VALUE, or is not, so a specialisation carries no dead copies). WGSL has no `#` or `$` token, so
 * none can be mistaken for WGSL, and a shader that reaches the GPU with a directive left in it fails
 * loudly instead of compiling to something else. Pure functions over text: Deno's loader and the
 * browser bundle (web/build.ts, through `shaderSource`) run this same code, so both see the same
 * WGSL. How to use them: the header of shader_source.ts.
 */

/** Values that specialise a shader: `#const NAME`, `const NAME ... = v;` and `alias NAME = T;`. */
export type Defines = Record<string, number | string | boolean>;

/** Where include files live, relative to shaders/; top-level shaders are `shaders/<name>.wgsl`. */
export const INCLUDE_DIR = "include";

/** Reads a file under shaders/ by relative path; undefined when there is no such file. */
export type ShaderReader = (path: string) => string | undefined;

const DIRECTIVE = /^[ \t]*#(\w*)(.*)$/;
const UNROLL_ARGS = /^[ \t]+([A-Za-z_]\w*)[ \t]+(\d+)[ \t]*(\/\/.*)?$/;
/** Most copies one `#unroll` makes: a guard against a typo that would bloat a shader. */
const MAX_UNROLL = 64;
const INCLUDE_ARG = /^[ \t]+"([\w./-]+\.wgsl)"[ \t]*(\/\/.*)?$/;
const CONST_LINE = /^[ \t]*#const[ \t]+(\w+)[ \t]*:[ \t]*(\w+)[ \t]*;?[ \t]*(\/\/.*)?$/gm;

/**
 * The text of `shaders/<name>.wgsl` with every `#include "x.wgsl"` line replaced by the text of
 * `shaders/include/x.wgsl`, recursively. Each file is pasted once per shader (later includes of
 * it, circular ones too, vanish), so two includes may share a third. The lines between
 * `#unroll NAME COUNT` and its `#end` are written out COUNT times, with `$NAME` replaced by 0, 1,
 * ... in turn (an abstract integer: it takes the type of what it meets, and names like `acc$NAME`
 * become acc0, acc1, ...): straight-line code where a GPU compiler would not unroll a loop.
 * Unrolls nest. `#const` lines are left for `specialize`; any other `#` line is an error naming
 * the file and line.
 */
export function expandIncludes(name: string, read: ShaderReader): string {
  const top = `${name}.wgsl`;
  const text = read(top);
  if (text === undefined) throw new Error(`shader "${name}": no such file shaders/${top}`);
  return expand(text, { shader: name, file: top, read, seen: new Set([top]) });
}

interface Expansion {
  shader: string;
  file: string; // path under shaders/ of the text being expanded
  read: ShaderReader;
  seen: Set<string>;
}

function expand(text: string, ctx: Expansion, firstLine = 1): string {
  const lines = text.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const m = DIRECTIVE.exec(line);
    // #const and #if / #endif need the defines: specialize() resolves them.
    if (!m || m[1] === "const" || m[1] === "if" || m[1] === "endif") {
      out.push(line);
      continue;
    }
    const where = `shader "${ctx.shader}" (${ctx.file} line ${firstLine + i})`;
    if (m[1] === "unroll") {
      const end = matchingEnd(lines, i, where);
      out.push(unroll(lines.slice(i + 1, end), m[2], where, ctx, firstLine + i + 1));
      i = end;
      continue;
    }
    if (m[1] === "end") throw new Error(`${where}: #end without an #unroll`);
    if (m[1] !== "include") {
      throw new Error(
        `${where}: unknown directive "#${m[1]}" (only #include, #const, #unroll and #if exist)`,
      );
    }
    const arg = INCLUDE_ARG.exec(m[2]);
    if (!arg || arg[1].split("/").includes("..")) {
      throw new Error(`${where}: write #include "file.wgsl", a file in shaders/${INCLUDE_DIR}/`);
    }
    const path = `${INCLUDE_DIR}/${arg[1]}`;
    if (ctx.seen.has(path)) continue;
    ctx.seen.add(path);
    const body = ctx.read(path);
    if (body === undefined) {
      throw new Error(`${where}: #include "${arg[1]}" names a missing file, shaders/${path}`);
    }
    out.push(expand(body.replace(/\n$/, ""), { ...ctx, file: path }));
  }
  return out.join("\n");
}

/** Index of the `#end` closing the `#unroll` at line `at` (nested unrolls skipped). */
function matchingEnd(lines: string[], at: number, where: string): number {
  let depth = 0;
  for (let j = at + 1; j < lines.length; j++) {
    const d = DIRECTIVE.exec(lines[j])?.[1];
    if (d === "unroll") depth++;
    if (d === "end" && depth-- === 0) return j;
  }
  throw new Error(`${where}: #unroll without its #end`);
}

/** `body` written out once per value of the `#unroll` line's name (args: " NAME COUNT"). */
function unroll(body: string[], args: string, where: string, ctx: Expansion, first: number) {
  const a = UNROLL_ARGS.exec(args);
  const count = a ? Number(a[2]) : NaN;
  if (!a || count < 1 || count > MAX_UNROLL) {
    throw new Error(`${where}: write #unroll NAME COUNT, COUNT from 1 to ${MAX_UNROLL}`);
  }
  const name = new RegExp(`\\$${a[1]}(?!\\w)`, "g");
  const text = body.join("\n");
  const copies: string[] = [];
  for (let k = 0; k < count; k++) copies.push(expand(text.replace(name, `${k}`), ctx, first));
  return copies.join("\n");
}

/** The include files `shaders/<name>.wgsl` pulls in, directly or not, in order. */
export function includesOf(name: string, read: ShaderReader): string[] {
  const found: string[] = [];
  expandIncludes(name, (path) => {
    if (path.startsWith(`${INCLUDE_DIR}/`)) found.push(path);
    return read(path);
  });
  return found;
}

/** A TS value as a WGSL literal of `type`; throws naming the shader and constant on a mismatch. */
function literal(value: number | string | boolean, type: string, where: string): string {
  if (typeof value === "string") return value; // an expression or a literal written by hand
  const fail = (): never => {
    throw new Error(`${where}: ${JSON.stringify(value)} is not a ${type}`);
  };
  if (type === "bool") return typeof value === "boolean" ? `${value}` : fail();
  if (typeof value !== "number") return fail();
  if (type === "u32") return Number.isInteger(value) && value >= 0 ? `${value}u` : fail();
  if (type === "i32") return Number.isInteger(value) ? `${value}i` : fail();
  if (type === "f32" || type === "f16") return Number.isFinite(value) ? `${value}` : fail();
  return fail();
}

/**
 * Applies `defines` to expanded WGSL: `#const NAME: type` becomes `const NAME: type = <value>;`
 * (a missing value is an error: the TS op is the one home of that number), and module-scope
 * `const NAME ... = ...;` / `alias NAME = ...;` declarations take the given value in place of
 * their default. Plain text substitution keeps every specialisation valid WGSL on every
 * implementation (override constants cannot size workgroup arrays everywhere).
 */
export function specialize(code: string, name: string, defines: Defines = {}): string {
  const declared = new Set<string>();
  let out = code.replace(CONST_LINE, (_line, key: string, type: string) => {
    if (declared.has(key)) throw new Error(`shader "${name}" declares #const ${key} twice`);
    declared.add(key);
    if (!(key in defines)) {
      throw new Error(
        `shader "${name}" needs a value for #const ${key}: ${type}; pass it in the kernel spec's ` +
          `defines (the TS op that dispatches the shader owns the number)`,
      );
    }
    return `const ${key}: ${type} = ${
      literal(defines[key], type, `shader "${name}" #const ${key}`)
    };`;
  });
  for (const [key, value] of Object.entries(defines)) {
    if (declared.has(key)) continue;
    const constRe = new RegExp(`(^|\\n)(\\s*const\\s+${key}\\s*(?::\\s*\\w+)?\\s*=)[^;]*;`);
    const aliasRe = new RegExp(`(^|\\n)(\\s*alias\\s+${key}\\s*=)[^;]*;`);
    if (constRe.test(out)) {
      out = out.replace(constRe, `$1$2 ${value};`);
    } else if (aliasRe.test(out)) {
      out = out.replace(aliasRe, `$1$2 ${value};`);
    } else {
      throw new Error(
        `shader "${name}" has no '#const ${key}', 'const ${key}' or 'alias ${key}' to specialise`,
      );
    }
  }
  out = resolveIfs(out, name, defines, declared);
  const left = /^[ \t]*#.*$/m.exec(out);
  if (left) throw new Error(`shader "${name}": directive left after specialising: ${left[0]}`);
  return out;
}

const IF_ARGS = /^[ \t]+(\w+)[ \t]*(==|!=)[ \t]*(\w+)[ \t]*(\/\/.*)?$/;

/**
 * Keeps the lines of each `#if NAME == VALUE` ... `#endif` whose #const NAME has that value (of
 * each `#if NAME != VALUE` whose #const has another).
 */
function resolveIfs(code: string, name: string, defines: Defines, consts: Set<string>): string {
  const out: string[] = [];
  const open: boolean[] = [];
  for (const line of code.split("\n")) {
    const m = DIRECTIVE.exec(line);
    if (m?.[1] === "if") {
      const arg = IF_ARGS.exec(m[2]);
      if (!arg) {
        throw new Error(`shader "${name}": write #if NAME == VALUE (or !=), got: ${line.trim()}`);
      }
      if (!consts.has(arg[1])) {
        throw new Error(`shader "${name}": #if ${arg[1]} names no #const of the shader`);
      }
      open.push((String(defines[arg[1]]) === arg[3]) === (arg[2] === "=="));
    } else if (m?.[1] === "endif") {
      if (open.pop() === undefined) throw new Error(`shader "${name}": #endif without an #if`);
    } else if (open.every(Boolean)) out.push(line);
  }
  if (open.length) throw new Error(`shader "${name}": #if without its #endif`);
  return out.join("\n");
}
