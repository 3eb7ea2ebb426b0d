/**
 * The estimator table of docs/architecture.md, rendered from the registry (a test checks that the
 * page and the registry agree, so the table never lists a name the trainer cannot run).
 */
import { ADV_ESTIMATORS } from "../advantage.ts";

/** Lines that bracket the generated table in the page. */
export const ESTIMATOR_TABLE_BEGIN = "<!-- adv_estimator table: generated from ADV_ESTIMATORS -->";
export const ESTIMATOR_TABLE_END = "<!-- end of adv_estimator table -->";

const yes = (b: boolean | undefined) => (b ? "yes" : "");

/** Rows of cells, header first: name, what the trainer builds for it, keys read, formula. */
export function estimatorTableRows(): string[][] {
  const rows = [[
    "`algorithm.adv_estimator`",
    "critic",
    "groups (`rollout.n` ≥ 2)",
    "greedy baseline rollout",
    "Σπ² (`calculate_sum_pi_squared`)",
    "keys read",
    "formula",
  ]];
  for (const name of ADV_ESTIMATORS.names()) {
    const e = ADV_ESTIMATORS.get(name);
    if (e.doc.includes("|")) throw new Error(`estimator ${name}: doc may not contain "|"`);
    rows.push([
      `\`${name}\``,
      yes(e.critic),
      yes(e.groups),
      yes(e.greedyBaseline),
      yes(e.sumPiSquared),
      (e.keys ?? []).map((k) => `\`${k}\``).join(", "),
      e.doc,
    ]);
  }
  return rows;
}

/** The table as markdown (unpadded; `deno fmt` aligns the columns). */
export function estimatorTable(): string {
  const [head, ...body] = estimatorTableRows();
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(head), line(head.map(() => "---")), ...body.map(line)].join("\n");
}
