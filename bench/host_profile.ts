/**
 * Where a bench spends host (JavaScript) time: runs another bench in this process under V8's
 * sampling profiler (`node:inspector`) and prints, per root function, the functions by inclusive
 * and by self seconds. Samples inside pipeline compilation (createComputePipeline,
 * createShaderModule) are counted apart, so a first run's compiles do not hide the steady state.
 *
 *   deno run -A bench/host_profile.ts bench/engine_device.ts --requests 64 --max-seqs 64 \
 *     --prompt 128 --min-new 256 --max-new 256 --dtype f16 --kv f16 --mode generate,engine
 *
 * The bench reads the same arguments (its own flags; the leading path is not one of them).
 * HOST_PROFILE_ROOTS: comma list of function-name prefixes whose subtrees are broken down
 * (default "generate,#run": lock-step generate and the engine's step loop; "(root)" for all).
 * HOST_PROFILE_TOP: rows per list (default 30). HOST_PROFILE_OUT: also write the raw profile
 * there (a .cpuprofile that Chrome's DevTools opens).
 */
import { Session } from "node:inspector/promises";
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const bench = Deno.args[0];
if (!bench || bench.startsWith("--")) {
  throw new Error("host_profile: give the bench to run first, e.g. bench/engine_device.ts");
}
const roots = (Deno.env.get("HOST_PROFILE_ROOTS") ?? "generate,#run").split(",");
const top = Number(Deno.env.get("HOST_PROFILE_TOP") ?? "30");

const session = new Session();
session.connect();
await session.post("Profiler.enable");
await session.post("Profiler.setSamplingInterval", { interval: 250 }); // microseconds
await session.post("Profiler.start");
await import(pathToFileURL(resolve(bench)).href);
const { profile } = await session.post("Profiler.stop") as { profile: Profile };
const out = Deno.env.get("HOST_PROFILE_OUT");
if (out) Deno.writeTextFileSync(out, JSON.stringify(profile));

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n: ProfileNode) => {
  const file = n.callFrame.url.split("/").slice(-2).join("/");
  return `${n.callFrame.functionName || "(anonymous)"} ${file}:${n.callFrame.lineNumber + 1}`;
};
/** Names of a sample's frames, innermost first. */
function stack(id: number): string[] {
  const names: string[] = [];
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    names.push(name(byId.get(cur)!));
  }
  return names;
}
const compiling = (s: string[]) =>
  s.some((f) => f.startsWith("createComputePipeline ") || f.startsWith("createShaderModule "));
// Each sample's stack once, shared by every root; a sample lasts until the next one.
const samples = profile.samples.map((id, i) => {
  const s = stack(id);
  return { stack: s, us: profile.timeDeltas[i + 1] ?? 0, inCompile: compiling(s) };
});

for (const root of roots) {
  const inclusive = new Map<string, number>(), self = new Map<string, number>();
  let compile = 0, total = 0;
  for (const { stack: s, us, inCompile } of samples) {
    if (!s.some((f) => f.startsWith(root))) continue;
    if (inCompile) {
      compile += us;
      continue;
    }
    total += us;
    self.set(s[0], (self.get(s[0]) ?? 0) + us);
    for (const f of new Set(s)) inclusive.set(f, (inclusive.get(f) ?? 0) + us);
  }
  const rows = (m: Map<string, number>) =>
    [...m].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([f, us]) => `${(us / 1e6).toFixed(3).padStart(8)} s  ${f}`).join("\n");
  console.log(
    `== ${root}: ${(total / 1e6).toFixed(3)} s sampled, ${(compile / 1e6).toFixed(3)} s ` +
      `compiling pipelines (left out)\n-- inclusive --\n${rows(inclusive)}\n-- self --\n${
        rows(self)
      }`,
  );
}
