/**
 * The catalogue of bad inputs: every case a user could plausibly type or hand us, each a real
 * command (a subprocess of the entry point) and the error it must print. A case passes when the
 * command exits non-zero and its output names the input at fault.
 *
 *   deno run -A test/bad_inputs/catalogue.ts [filter]    # prints one line per case
 */
import { AGENT_CASES } from "./cases_agents.ts";
import { CONFIG_CASES, schemaCases } from "./cases_config.ts";
import { FILE_CASES } from "./cases_files.ts";
import { TASK_CASES } from "./cases_tasks.ts";
import { type BadInput, type CaseResult, makeFixture, runAll } from "./harness.ts";

export function allCases(): BadInput[] {
  return [...CONFIG_CASES, ...FILE_CASES, ...TASK_CASES, ...AGENT_CASES, ...schemaCases()];
}

export async function runCatalogue(filter = ""): Promise<CaseResult[]> {
  const root = Deno.makeTempDirSync({ prefix: "webrl_bad_inputs_" });
  try {
    const fixture = await makeFixture(root);
    const cases = allCases().filter((c) => c.name.includes(filter));
    return await runAll(fixture, cases, Math.max(2, navigator.hardwareConcurrency));
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
}

if (import.meta.main) {
  const results = await runCatalogue(Deno.args[0] ?? "");
  for (const r of results) {
    const last = r.output.trim().split("\n").filter((l) => !l.startsWith("usage") && l.trim())
      .slice(0, 1)[0] ?? "";
    console.log(
      `${r.ok ? "ok  " : "FAIL"} [${r.task}] ${r.name}: exit ${r.code}; ${r.why || last}`,
    );
    if (!r.ok) {
      console.log(r.output.trim().split("\n").slice(0, 8).map((l) => `    | ${l}`).join("\n"));
    }
  }
  const bad = results.filter((r) => !r.ok).length;
  console.log(`${results.length} cases, ${results.length - bad} ok, ${bad} failing`);
  Deno.exit(bad ? 1 : 0);
}
