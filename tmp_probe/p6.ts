import { parse } from "yaml";
import { loadConfig } from "../src/config/mod.ts";
const doc = parse(Deno.readTextFileSync("/tmp/verl_gen_ppo.yaml")) as Record<string, unknown>;
const flat: [string, unknown][] = [];
function walk(o: unknown, p: string) {
  if (o && typeof o === "object" && !Array.isArray(o) && Object.keys(o as object).length) {
    for (const [k, v] of Object.entries(o as Record<string, unknown>)) walk(v, p ? `${p}.${k}` : k);
  } else flat.push([p, o]);
}
walk(doc, "");
const out: Record<string, string[]> = { ok: [], unknown: [], verl: [], refused: [], other: [] };
for (const [k, v] of flat) {
  if (k.startsWith("_") || k.includes("._target_")) continue;
  const val = typeof v === "string" && v.startsWith("${") ? null : v;
  if (val === null && typeof v === "string") continue; // interpolations
  try {
    loadConfig("ppo_trainer", { overrides: [`${k}=${JSON.stringify(val)}`], skipPathChecks: true });
    out.ok.push(k);
  } catch (e) {
    const m = (e as Error).message;
    if (m.startsWith("unknown config key")) out.unknown.push(k);
    else if (m.includes("is verl's, not taken")) out.verl.push(k);
    else if (m.includes("is not supported")) out.refused.push(`${k}=${JSON.stringify(val)}`);
    else out.other.push(`${k}=${JSON.stringify(val)}: ${m.slice(0, 120)}`);
  }
}
console.log(Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.length])));
console.log("UNKNOWN", out.unknown.join("\n"));
console.log("REFUSED", out.refused.join("\n"));
console.log("OTHER", out.other.join("\n"));
