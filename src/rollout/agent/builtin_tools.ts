/**
 * Built-in tools, registered by name (the `class_name` of a tool YAML entry). verl's class names
 * map to ours, so verl's YAML files work unchanged.
 */
import { gsm8kScore } from "../../reward/mod.ts";
import { calculate } from "./calculator.ts";
import { SearchTool } from "./search_tool.ts";
import { type AgentTool, StatefulTool, type ToolResult, type ToolSchema } from "./types.ts";

/** `calculator`: evaluates `expression` exactly (see calculator.ts). */
export class CalculatorTool extends StatefulTool<null> {
  static readonly defaultSchema: ToolSchema = {
    type: "function",
    function: {
      name: "calculator",
      description: "Evaluates an arithmetic expression (+ - * / % ^ and parentheses) exactly.",
      parameters: {
        type: "object",
        properties: { expression: { type: "string", description: "e.g. (12.5 - 3) * 4" } },
        required: ["expression"],
      },
    },
  };
  protected initial() {
    return null;
  }
  protected run(_: null, args: Record<string, unknown>): ToolResult {
    return { text: calculate(String(args.expression)) };
  }
}

interface Gsm8kState {
  groundTruth: string | null;
  response: string;
  reward: number;
}

/**
 * verl's Gsm8kTool: `answer` is scored against `create_kwargs.ground_truth` with the flexible
 * gsm8k rule (1.0 on a match, else 0); the step reward is 0 for an improved answer and -0.05
 * otherwise; calc_reward is the last answer's score.
 */
export class Gsm8kTool extends StatefulTool<Gsm8kState> {
  static readonly defaultSchema: ToolSchema = {
    type: "function",
    function: {
      name: "calc_gsm8k_reward",
      description: "Checks an answer to the GSM8K problem (1.0 if correct, else 0.0).",
      parameters: {
        type: "object",
        properties: { answer: { type: "string", description: "The answer, digits only" } },
        required: ["answer"],
      },
    },
  };
  protected initial(kw: Record<string, unknown>): Gsm8kState {
    const gt = kw.ground_truth;
    return {
      groundTruth: gt === undefined || gt === null ? null : String(gt),
      response: "",
      reward: 0,
    };
  }
  private score(s: Gsm8kState): number {
    if (s.groundTruth === null) return 0;
    return gsm8kScore(s.response, s.groundTruth, { method: "flexible", formatScore: 0, score: 1 });
  }
  protected run(s: Gsm8kState, args: Record<string, unknown>): ToolResult {
    const answer = typeof args.answer === "string" ? args.answer : JSON.stringify(args.answer);
    s.response = answer.startsWith("#### ") ? answer : `#### ${answer}`;
    const reward = this.score(s);
    const step = reward > s.reward ? 0 : -0.05;
    s.reward = reward;
    return {
      text: `Current parsed answer=${JSON.stringify(answer)} reward=${reward}`,
      reward: step,
    };
  }
  override calcReward(instanceId: string): Promise<number> {
    const s = this.instances.get(instanceId);
    return Promise.resolve(s ? this.score(s) : 0);
  }
}

/** How a built-in tool is made from a YAML entry's `config` and `tool_schema`. */
export interface BuiltinTool {
  make(
    config: Record<string, unknown>,
    schema: ToolSchema | null,
    at: string,
  ): Promise<AgentTool> | AgentTool;
  doc: string;
}

/** Built-in tools by `class_name` (ours and verl's). */
export const BUILTIN_TOOLS: Readonly<Record<string, BuiltinTool>> = (() => {
  const calculator: BuiltinTool = {
    make: (_c, s) => new CalculatorTool(s ?? CalculatorTool.defaultSchema),
    doc: "exact arithmetic on integers and decimals",
  };
  const gsm8k: BuiltinTool = {
    make: (_c, s) => new Gsm8kTool(s ?? Gsm8kTool.defaultSchema),
    doc: "checks a GSM8K answer against create_kwargs.ground_truth (verl's Gsm8kTool)",
  };
  const search: BuiltinTool = {
    make: (c, s, at) => SearchTool.fromConfig(c, s, at),
    doc: "Search-R1 retrieval: BM25 over a local JSONL corpus, or retrieval_service_url",
  };
  return {
    calculator,
    gsm8k,
    search,
    "verl.tools.gsm8k_tool.Gsm8kTool": gsm8k,
    "verl.tools.search_tool.SearchTool": search,
  };
})();
