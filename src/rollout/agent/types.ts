/**
 * What the agent loop needs from a tool: verl's BaseTool lifecycle. Per trajectory the loop calls
 * `create` once per tool (with `extra_info.tools_kwargs[name].create_kwargs`), `execute` for each
 * call the model makes, then `calcReward` and `release` when the trajectory ends.
 */

/** An OpenAI function schema, as verl's tool YAML and chat templates' `tools` hold it. */
export interface ToolSchema {
  type: "function";
  function: {
    name: string;
    description?: string;
    parameters?: {
      type?: string;
      properties?: Record<string, Record<string, unknown>>;
      required?: string[];
      [key: string]: unknown;
    };
    [key: string]: unknown;
  };
}

/** What one call returns: the text the model reads, a step reward and metrics. */
export interface ToolResult {
  text: string;
  reward?: number;
  metrics?: Record<string, unknown>;
}

export interface AgentTool {
  readonly name: string;
  readonly schema: ToolSchema;
  /** Starts an instance for one trajectory; returns its id. */
  create(instanceId: string, createKwargs: Record<string, unknown>): Promise<void>;
  /** Runs one call; a thrown error becomes the tool message's text. */
  execute(instanceId: string, args: Record<string, unknown>): Promise<ToolResult>;
  /** The instance's reward when the trajectory ends (verl's calc_reward). */
  calcReward(instanceId: string): Promise<number>;
  release(instanceId: string): Promise<void>;
  /** Frees what the tool holds for the whole run (a worker, a connection). */
  close?(): void;
}

/** Thrown for a call whose arguments do not fit the tool's schema. */
export class ToolArgumentError extends Error {
  override name = "ToolArgumentError";
}

/**
 * Checks a call's arguments against the schema's `required` list and declared property types
 * (string, number, integer, boolean, array, object); unknown properties are refused.
 */
export function checkArguments(schema: ToolSchema, args: Record<string, unknown>): void {
  const params = schema.function.parameters ?? {};
  const props = params.properties ?? {};
  for (const key of params.required ?? []) {
    if (!(key in args)) throw new ToolArgumentError(`missing required argument "${key}"`);
  }
  for (const [key, value] of Object.entries(args)) {
    const spec = props[key];
    if (!spec) {
      const known = Object.keys(props).join(", ") || "none";
      throw new ToolArgumentError(`unknown argument "${key}" (arguments: ${known})`);
    }
    const type = spec.type;
    const ok = type === undefined ||
      (type === "string" && typeof value === "string") ||
      (type === "number" && typeof value === "number") ||
      (type === "integer" && Number.isInteger(value)) ||
      (type === "boolean" && typeof value === "boolean") ||
      (type === "array" && Array.isArray(value)) ||
      (type === "object" && typeof value === "object" && value !== null && !Array.isArray(value));
    if (!ok) {
      throw new ToolArgumentError(
        `argument "${key}" should be ${type}, got ${JSON.stringify(value)}`,
      );
    }
  }
}

/** A tool that keeps per-instance state in a map; subclasses implement `run`. */
export abstract class StatefulTool<S> implements AgentTool {
  readonly name: string;
  protected readonly instances = new Map<string, S>();
  constructor(readonly schema: ToolSchema) {
    this.name = schema.function.name;
  }
  protected abstract initial(createKwargs: Record<string, unknown>): S;
  protected abstract run(state: S, args: Record<string, unknown>): Promise<ToolResult> | ToolResult;

  create(instanceId: string, createKwargs: Record<string, unknown>): Promise<void> {
    this.instances.set(instanceId, this.initial(createKwargs));
    return Promise.resolve();
  }
  async execute(instanceId: string, args: Record<string, unknown>): Promise<ToolResult> {
    const state = this.instances.get(instanceId);
    if (state === undefined) throw new Error(`${this.name}: no instance ${instanceId}`);
    checkArguments(this.schema, args);
    return await this.run(state, args);
  }
  calcReward(_instanceId: string): Promise<number> {
    return Promise.resolve(0);
  }
  release(instanceId: string): Promise<void> {
    this.instances.delete(instanceId);
    return Promise.resolve();
  }
}
