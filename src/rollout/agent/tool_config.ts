/**
 * verl's tool YAML (`multi_turn.tool_config_path`):
 *
 *   tools:
 *     - class_name: verl.tools.gsm8k_tool.Gsm8kTool   # a built-in name, or ./my_tool.ts[:Class]
 *       config: {type: native, ...}
 *       tool_schema: {type: function, function: {name, description, parameters}}
 *
 * A `class_name` ending in .ts/.js/.mjs (with an optional `:ExportName`) is a user module, found
 * relative to the YAML file's folder and run sandboxed (user_tool.ts).
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { parse } from "yaml";
import { BUILTIN_TOOLS } from "./builtin_tools.ts";
import type { AgentTool, ToolSchema } from "./types.ts";
import { UserTool } from "./user_tool.ts";

const MODULE = /^(.*\.(?:ts|js|mjs|mts))(?::([A-Za-z_$][\w$]*))?$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function checkSchema(v: unknown, at: string): ToolSchema | null {
  if (v === undefined || v === null) return null;
  const fn = isObject(v) ? v.function : undefined;
  if (!isObject(v) || v.type !== "function" || !isObject(fn) || typeof fn.name !== "string") {
    throw new Error(`${at}.tool_schema: expected {type: function, function: {name, ...}}`);
  }
  if (fn.parameters !== undefined && !isObject(fn.parameters)) {
    throw new Error(`${at}.tool_schema.function.parameters: expected an object`);
  }
  return v as unknown as ToolSchema;
}

/** Builds the tools of a parsed tool YAML; `file` names it in errors and anchors module paths. */
export async function toolsFromConfig(doc: unknown, file: string): Promise<AgentTool[]> {
  const list = isObject(doc) ? doc.tools : undefined;
  if (!Array.isArray(list)) throw new Error(`${file}: expected a top-level "tools:" list`);
  const tools: AgentTool[] = [];
  for (const [i, entry] of list.entries()) {
    const at = `${file}: tools[${i}]`;
    if (!isObject(entry) || typeof entry.class_name !== "string") {
      throw new Error(`${at}: expected {class_name, config, tool_schema}`);
    }
    const config = entry.config ?? {};
    if (!isObject(config)) throw new Error(`${at}.config: expected a mapping`);
    const type = config.type ?? "native";
    if (type !== "native") {
      throw new Error(`${at}.config.type=${type}: only native tools run here (MCP tools do not)`);
    }
    const schema = checkSchema(entry.tool_schema, at);
    const builtin = Object.hasOwn(BUILTIN_TOOLS, entry.class_name)
      ? BUILTIN_TOOLS[entry.class_name]
      : undefined;
    const m = MODULE.exec(entry.class_name);
    let tool: AgentTool;
    if (builtin) tool = await builtin.make(config, schema, at);
    else if (m) {
      if (!schema) throw new Error(`${at}.tool_schema: a user tool needs its schema`);
      const path = isAbsolute(m[1]) ? m[1] : resolve(dirname(file), m[1]);
      tool = await UserTool.load({ path, exportName: m[2] ?? null }, config, schema, at);
    } else {
      throw new Error(
        `${at}.class_name=${entry.class_name}: not a built-in tool (${
          Object.keys(BUILTIN_TOOLS).join(", ")
        }) nor a .ts/.js module path`,
      );
    }
    if (tools.some((t) => t.name === tool.name)) {
      throw new Error(`${at}: a second tool named "${tool.name}"`);
    }
    tools.push(tool);
  }
  return tools;
}

/** Reads and builds the tools of a tool YAML file. */
export async function loadToolConfig(path: string): Promise<AgentTool[]> {
  let doc: unknown;
  try {
    doc = parse(await Deno.readTextFile(path));
  } catch (e) {
    throw new Error(`multi_turn.tool_config_path=${path}: ${(e as Error).message}`);
  }
  return await toolsFromConfig(doc, path);
}
