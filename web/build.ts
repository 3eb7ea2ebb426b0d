/**
 * Bundles the browser trainer into a static folder (default `dist/web/`): index.html, main.js (the
 * page), worker.js (the trainer's Web Worker), reward_sandbox.js (the worker a pasted reward
 * function runs in), rollout.html with rollout.js and rollout_worker.js (a tab that joins a
 * distributed run as a rollout worker), style.css (ours plus uPlot's) and the starting models
 * (model/ for the arithmetic task, model_calc/ for the calculator task, each listed in its
 * files.json).
 *
 *   deno run -A web/build.ts [--out dist/web] [--dev]
 *
 * esbuild cannot see Deno's import map or npm cache, so bare imports are resolved through a
 * throwaway `node_modules` folder of links into Deno's npm cache, every `shaders/*.wgsl` is inlined
 * into web/shaders.ts (with its `#include`s expanded by the loader Deno itself uses, so the page
 * runs the same WGSL), and `node:` built-ins (imported by modules that only use them in Deno) are
 * replaced by stubs.
 */
import * as esbuild from "esbuild";
import { shaderNames, shaderSource } from "../src/gpu/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const WEB = `${ROOT}web/`;

/**
 * The starting models, committed under assets/ (config.json + model.safetensors): per folder of
 * the page, the first candidate present. `model/` is the arithmetic task's, `model_calc/` the
 * calculator task's (its multi-turn SFT checkpoint with the tool tokenizer).
 */
export const PAGE_MODELS: Record<string, string[]> = {
  model: ["assets/tiny_arith", "assets/model"],
  model_calc: ["assets/tiny_calc"],
};

interface BuildOptions {
  outDir?: string;
  /** The page's entry module (default web/main.ts). */
  entry?: string;
  minify?: boolean;
  quiet?: boolean;
  /** Run before the project's own plugin (e.g. to stand in for a module under construction). */
  plugins?: esbuild.Plugin[];
}

async function run(args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), { args, cwd: ROOT, stderr: "inherit" })
    .output();
  if (!out.success) throw new Error(`deno ${args.join(" ")} failed`);
  return new TextDecoder().decode(out.stdout);
}

/** Links every npm package of the import map (and what they depend on) into `<dir>/node_modules`. */
async function linkNpmPackages(dir: string, entry: string): Promise<string> {
  // Fetches whatever npm packages the page imports into Deno's cache (a fresh machine has none).
  await run(["cache", "--quiet", entry]).catch((e) =>
    console.warn(`${e.message}; bundling anyway`)
  );
  const info = JSON.parse(await run(["info", "--json"])) as { npmCache: string };
  const registry = `${info.npmCache}/registry.npmjs.org`;
  const modules = `${dir}/node_modules`;
  await Deno.remove(modules, { recursive: true }).catch(() => {});
  const imports = (JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)) as {
    imports: Record<string, string>;
  }).imports;
  const seen = new Set<string>();
  const link = async (name: string, version: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    const target = `${registry}/${name}/${version}`;
    await Deno.mkdir(`${modules}/${name}`.replace(/\/[^/]+$/, ""), { recursive: true });
    await Deno.symlink(target, `${modules}/${name}`);
    const pkg = JSON.parse(await Deno.readTextFile(`${target}/package.json`)) as {
      dependencies?: Record<string, string>;
    };
    for (const dep of Object.keys(pkg.dependencies ?? {})) {
      // Deno keeps one folder per resolved version; take the newest one present.
      const versions = [...Deno.readDirSync(`${registry}/${dep}`)]
        .filter((e) => e.isDirectory).map((e) => e.name).sort();
      if (versions.length > 0) await link(dep, versions[versions.length - 1]);
    }
  };
  for (const spec of Object.values(imports)) {
    const m = /^npm:(@?[^@]+)@(.+)$/.exec(spec);
    if (m && ["esbuild", "playwright-core"].indexOf(m[1]) < 0) await link(m[1], m[2]);
  }
  return modules;
}

/** Every `shaders/*.wgsl` by name, includes expanded, as the body of web/shaders.ts. */
export function shaderModule(): string {
  const sources: Record<string, string> = {};
  for (const name of shaderNames()) sources[name] = shaderSource(name);
  return `export const SHADERS = ${JSON.stringify(sources)};\n`;
}

/** A module whose named exports throw when called: they are only reached on Deno-only paths. */
function throwingModule(module: string, names: string[]): string {
  const msg = JSON.stringify(`${module} is not available in the browser`);
  return names.map((n) => `export function ${n}() { throw new Error(${msg}); }\n`).join("") +
    "export default {};\n";
}

/**
 * `node:` built-ins that browser-reachable modules import for their Deno-only paths:
 * src/config/load.ts checks data paths (skipped in the tab), src/reward/sandbox.ts resolves
 * custom reward files (the tab runs pasted reward code in web/reward_sandbox.ts instead),
 * src/rollout/agent/tool_config.ts resolves tool YAML paths (the tab builds its tools in code).
 */
const STUBS: Record<string, string> = {
  "node:fs": "export function existsSync() { return false; }\nexport default {};\n",
  "node:path": throwingModule("node:path", [
    "dirname",
    "resolve",
    "join",
    "basename",
    "relative",
    "isAbsolute",
  ]),
  "node:url": throwingModule("node:url", ["fileURLToPath", "pathToFileURL"]),
};

const plugin: esbuild.Plugin = {
  name: "webrl",
  setup(build) {
    build.onLoad({ filter: /[\\/]web[\\/]shaders\.ts$/ }, () => ({
      contents: shaderModule(),
      loader: "ts",
    }));
    build.onResolve({ filter: /^node:/ }, (args) => ({ path: args.path, namespace: "node-stub" }));
    build.onLoad({ filter: /.*/, namespace: "node-stub" }, (args) => ({
      contents: STUBS[args.path] ?? throwingModule(args.path, []),
      loader: "js",
    }));
  },
};

const MODEL_FILES = [
  "config.json",
  "model.safetensors",
  "generation_config.json",
  "tokenizer.json",
  "tokenizer_config.json",
];

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

async function copyIfExists(from: string, to: string): Promise<boolean> {
  try {
    await Deno.copyFile(from, to);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** Builds the static folder; returns its path. */
export async function buildWeb(options: BuildOptions = {}): Promise<string> {
  const out = options.outDir ?? `${ROOT}dist/web`;
  const work = `${ROOT}dist/.web-build`;
  await Deno.mkdir(work, { recursive: true });
  const entry = options.entry ?? `${WEB}main.ts`;
  const nodeModules = await linkNpmPackages(work, entry);
  await Deno.remove(out, { recursive: true }).catch(() => {});
  await Deno.mkdir(out, { recursive: true });
  const result = await esbuild.build({
    entryPoints: {
      main: entry,
      worker: `${WEB}worker.ts`,
      reward_sandbox: `${WEB}reward_sandbox.ts`,
      rollout: `${WEB}rollout_page.ts`,
      rollout_worker: `${WEB}rollout_worker.ts`,
    },
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    outdir: out,
    minify: options.minify ?? false,
    sourcemap: "linked",
    nodePaths: [nodeModules],
    plugins: [...(options.plugins ?? []), plugin],
    logLevel: options.quiet ? "error" : "warning",
    metafile: true,
    // Drops the Deno-only `if (import.meta.main)` blocks of CLI-capable modules.
    define: { "import.meta.main": "false" },
  });
  await esbuild.stop();
  await Deno.copyFile(`${WEB}index.html`, `${out}/index.html`);
  await Deno.copyFile(`${WEB}rollout.html`, `${out}/rollout.html`);
  const uplotCss = await Deno.readTextFile(`${nodeModules}/uplot/dist/uPlot.min.css`);
  await Deno.writeTextFile(
    `${out}/style.css`,
    uplotCss + "\n" + await Deno.readTextFile(`${WEB}style.css`),
  );
  // The page reads <folder>/files.json first, so it never asks for a file that is not there.
  const shippedFrom: string[] = [];
  for (const [folder, candidates] of Object.entries(PAGE_MODELS)) {
    await Deno.mkdir(`${out}/${folder}`, { recursive: true });
    const shipped: string[] = [];
    for (const dir of candidates) {
      if (!await exists(`${ROOT}${dir}/config.json`)) continue;
      for (const f of MODEL_FILES) {
        if (await copyIfExists(`${ROOT}${dir}/${f}`, `${out}/${folder}/${f}`)) shipped.push(f);
      }
      shippedFrom.push(`${folder}/ from ${dir}`);
      break;
    }
    await Deno.writeTextFile(`${out}/${folder}/files.json`, JSON.stringify(shipped) + "\n");
  }
  if (!options.quiet) {
    const bytes = Object.values(result.metafile!.outputs).reduce((a, o) => a + o.bytes, 0);
    console.log(
      `built ${out}: ${(bytes / 1024).toFixed(0)} KiB of JS; models: ${
        shippedFrom.join(", ") || "none (the page starts from a seeded random init)"
      }`,
    );
  }
  return out;
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--out");
  await buildWeb({
    outDir: i >= 0 ? Deno.args[i + 1] : undefined,
    minify: !Deno.args.includes("--dev"),
  });
}
