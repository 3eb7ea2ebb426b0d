/**
 * A user's tool module (`class_name: ./my_tool.ts` or `./my_tool.ts:MyTool` in the tool YAML) run
 * sandboxed (sandbox.ts). The module exports a class built with `(config, tool_schema)` whose
 * methods mirror verl's BaseTool: `execute(instanceId, parameters)` returning a string or `{text,
 * reward?, metrics?}`, and optionally `create(instanceId, createKwargs)`, `calcReward(instanceId)`,
 * `release(instanceId)`. A call over `config.timeout` seconds (default 30) fails with a timeout.
 * The module may reach exactly the hosts that URLs in its config name (a retrieval service's
 * `http://host:port/...`), nothing else.
 */
import { SandboxedModule } from "./sandbox.ts";
import { type AgentTool, checkArguments, type ToolResult, type ToolSchema } from "./types.ts";

export class UserTool implements AgentTool {
  readonly name: string;

  private constructor(readonly schema: ToolSchema, readonly module: SandboxedModule) {
    this.name = schema.function.name;
  }

  /** Loads the module in a fresh sandbox; throws naming `at` if it cannot load. */
  static async load(
    spec: { path: string; exportName: string | null },
    config: Record<string, unknown>,
    schema: ToolSchema,
    at: string,
  ): Promise<UserTool> {
    try {
      const module = await SandboxedModule.load({
        ...spec,
        ctorArgs: [config, schema],
        required: ["execute"],
        label: schema.function.name,
        timeoutMs: Number(config.timeout ?? 30) * 1000,
        netHosts: configuredHosts(config),
      });
      return new UserTool(schema, module);
    } catch (e) {
      throw new Error(`${at}.class_name=${spec.path}: ${(e as Error).message}`);
    }
  }

  async create(instanceId: string, createKwargs: Record<string, unknown>): Promise<void> {
    await this.module.call("create", [instanceId, createKwargs]);
  }

  async execute(instanceId: string, args: Record<string, unknown>): Promise<ToolResult> {
    checkArguments(this.schema, args);
    const v = await this.module.call("execute", [instanceId, args]);
    if (typeof v === "string") return { text: v };
    const r = v as Partial<ToolResult> | null;
    if (r && typeof r.text === "string") {
      return { text: r.text, reward: Number(r.reward ?? 0), metrics: r.metrics };
    }
    throw new Error(`${this.name}.execute returned neither a string nor {text}`);
  }

  async calcReward(instanceId: string): Promise<number> {
    const v = await this.module.call("calcReward", [instanceId]);
    return v === undefined ? 0 : Number(v);
  }

  async release(instanceId: string): Promise<void> {
    await this.module.call("release", [instanceId]);
  }

  close(): void {
    this.module.close();
  }
}

/** `host:port` of every http(s) or ws(s) URL among a config's string values, at any depth. */
export function configuredHosts(config: unknown): string[] {
  const hosts = new Set<string>();
  const visit = (v: unknown): void => {
    if (typeof v === "string") {
      if (!/^(https?|wss?):\/\//i.test(v)) return;
      try {
        const u = new URL(v);
        const port = u.port || (/^(https|wss):$/.test(u.protocol) ? "443" : "80");
        hosts.add(`${u.hostname}:${port}`);
      } catch {
        // not a URL after all: names no host
      }
    } else if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === "object") Object.values(v).forEach(visit);
  };
  visit(config);
  return [...hosts];
}
