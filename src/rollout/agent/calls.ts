/**
 * Runs one turn's tool calls against a trajectory's tool instances. Nothing the model writes can
 * stop the run: an unreadable call, an unknown tool, bad arguments or a tool that throws each
 * become the text of that call's tool message, and are counted.
 */
import type { ParsedCall } from "./parser.ts";
import { type TruncateSide, truncateToolResponse } from "./truncate.ts";
import type { AgentTool } from "./types.ts";

/** Counts and latencies per tool, merged over a batch into the step's metrics. */
export class ToolStats {
  readonly calls = new Map<string, number>();
  readonly errors = new Map<string, number>();
  readonly latency = new Map<string, number[]>();
  malformed = 0;
  unknown = 0;

  add(name: string, seconds: number, failed: boolean): void {
    this.calls.set(name, (this.calls.get(name) ?? 0) + 1);
    if (failed) this.errors.set(name, (this.errors.get(name) ?? 0) + 1);
    const l = this.latency.get(name) ?? [];
    l.push(seconds);
    this.latency.set(name, l);
  }

  metrics(): Record<string, number> {
    const m: Record<string, number> = {
      "tool_calls/malformed": this.malformed,
      "tool_calls/unknown_tool": this.unknown,
    };
    for (const [name, n] of this.calls) {
      const l = this.latency.get(name)!;
      m[`tool_calls/${name}/count`] = n;
      m[`tool_calls/${name}/errors`] = this.errors.get(name) ?? 0;
      m[`tool_calls/${name}/latency_s/mean`] = l.reduce((a, b) => a + b, 0) / l.length;
      m[`tool_calls/${name}/latency_s/max`] = Math.max(...l);
    }
    return m;
  }
}

export interface CallOptions {
  tools: ReadonlyMap<string, AgentTool>;
  /** Instance id of each tool in this trajectory. */
  instances: ReadonlyMap<string, string>;
  maxToolResponseLength: number;
  truncateSide: TruncateSide;
  stats: ToolStats;
}

/** One call's tool message and step reward (0 for a call that failed). */
export interface CallReply {
  text: string;
  reward: number;
}

/** Each call's tool message and step reward, in call order. */
export async function runCalls(calls: ParsedCall[], o: CallOptions): Promise<CallReply[]> {
  return await Promise.all(calls.map(async (call) => {
    if (!call.ok) {
      o.stats.malformed++;
      return { text: `Error when executing tool: ${call.error}`, reward: 0 };
    }
    const tool = o.tools.get(call.name);
    if (!tool) {
      o.stats.unknown++;
      const names = [...o.tools.keys()].join(", ") || "none";
      return {
        text: `Error when executing tool: unknown tool "${call.name}" (tools: ${names})`,
        reward: 0,
      };
    }
    const t0 = performance.now();
    let text: string, reward = 0, failed = false;
    try {
      const r = await tool.execute(o.instances.get(call.name)!, call.arguments);
      text = r.text;
      reward = Number.isFinite(r.reward) ? r.reward! : 0;
    } catch (e) {
      failed = true;
      text = `Error when executing tool: ${(e as Error).message ?? String(e)}`;
    }
    o.stats.add(call.name, (performance.now() - t0) / 1000, failed);
    return { text: truncateToolResponse(text, o.maxToolResponseLength, o.truncateSide), reward };
  }));
}
