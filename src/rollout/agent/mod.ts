/** The agent loop, its parsers, the tools and the interactions (built-in, from verl's YAML, user's). */
export {
  type AgentLoopOptions,
  type AgentSample,
  pickInteraction,
  runAgentLoop,
  type Trajectory,
  type TurnGenerator,
  type TurnRequest,
} from "./loop.ts";
export {
  hermesParser,
  llama3JsonParser,
  type ParsedCall,
  type ParsedTurn,
  TOOL_FORMATS,
  TOOL_PARSERS,
} from "./parser.ts";
export {
  checkTokenization,
  deltaTokens,
  SANITY_CHECK_MODES,
  type SanityCheckMode,
} from "./tokenize.ts";
export { TRUNCATE_SIDES, type TruncateSide, truncateToolResponse } from "./truncate.ts";
export { calculate, CalculatorError } from "./calculator.ts";
export { Bm25Index, type Hit, parseCorpus, type Passage } from "./bm25.ts";
export { passagesText, SearchTool } from "./search_tool.ts";
export { BUILTIN_TOOLS, CalculatorTool, Gsm8kTool } from "./builtin_tools.ts";
export { loadToolConfig, toolsFromConfig } from "./tool_config.ts";
export { UserTool } from "./user_tool.ts";
export {
  type AgentTool,
  checkArguments,
  StatefulTool,
  ToolArgumentError,
  type ToolResult,
  type ToolSchema,
} from "./types.ts";
export {
  type AgentInteraction,
  BUILTIN_INTERACTIONS,
  Gsm8kInteraction,
  type InteractionReply,
  lastAssistant,
} from "./interaction.ts";
export {
  defaultInteractionName,
  interactionsFromConfig,
  loadInteractionConfig,
} from "./interaction_config.ts";
export { UserInteraction } from "./user_interaction.ts";
