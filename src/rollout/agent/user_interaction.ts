/**
 * A user's interaction module (`class_name: ./my_user.ts[:Class]` in the interaction YAML) run
 * sandboxed like user tools (sandbox.ts). The module exports a class built with `(config)`
 * (`config.name` is the interaction's name) whose methods mirror verl's BaseInteraction:
 * `generateResponse(instanceId, messages, kwargs)` returning `[shouldTerminate, response, score,
 * extra]` or `{shouldTerminate, response, score?, extra?}`, and optionally
 * `startInteraction(instanceId, kwargs)`, `calculateScore(instanceId, kwargs)`,
 * `finalizeInteraction(instanceId, kwargs)`. A call over `config.timeout` seconds (default 30)
 * fails with a timeout.
 */
import type { ChatMessage } from "../../io/mod.ts";
import { type AgentInteraction, type InteractionReply, toReply } from "./interaction.ts";
import { SandboxedModule } from "./sandbox.ts";

export class UserInteraction implements AgentInteraction {
  private constructor(readonly name: string, readonly module: SandboxedModule) {}

  /** Loads the module in a fresh sandbox; throws naming `at` if it cannot load. */
  static async load(
    spec: { path: string; exportName: string | null },
    name: string,
    config: Record<string, unknown>,
    at: string,
  ): Promise<UserInteraction> {
    try {
      const module = await SandboxedModule.load({
        ...spec,
        ctorArgs: [{ ...config, name }],
        required: ["generateResponse"],
        label: name,
        timeoutMs: Number(config.timeout ?? 30) * 1000,
      });
      return new UserInteraction(name, module);
    } catch (e) {
      throw new Error(`${at}.class_name=${spec.path}: ${(e as Error).message}`);
    }
  }

  async start(instanceId: string, kwargs: Record<string, unknown>): Promise<void> {
    await this.module.call("startInteraction", [instanceId, kwargs]);
  }

  async generateResponse(
    instanceId: string,
    messages: readonly ChatMessage[],
    kwargs: Record<string, unknown>,
  ): Promise<InteractionReply> {
    const v = await this.module.call("generateResponse", [instanceId, messages, kwargs]);
    return toReply(v, this.name);
  }

  async calculateScore(instanceId: string, kwargs: Record<string, unknown>): Promise<number> {
    const v = await this.module.call("calculateScore", [instanceId, kwargs]);
    if (v === undefined || v === null) return 0;
    if (typeof v !== "number" || !Number.isFinite(v)) {
      throw new Error(`${this.name}.calculateScore returned ${JSON.stringify(v)}, not a number`);
    }
    return v;
  }

  async finalize(instanceId: string, kwargs: Record<string, unknown>): Promise<void> {
    await this.module.call("finalizeInteraction", [instanceId, kwargs]);
  }

  close(): void {
    this.module.close();
  }
}
