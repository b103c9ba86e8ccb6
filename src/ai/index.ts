/**
 * `rolebox/ai`: rolebox's tools for LLM agents, and agents as a session's effect handlers
 * (agentEffects, which loads `ai` 6.x when a handler first runs). The AI SDK wrappers need `ai` for their
 * types only, the MCP server loads @modelcontextprotocol/sdk (1.x) when it is made; the plain
 * definitions need neither.
 *
 * @module rolebox/ai
 */

export {
  type AgentEffectHandler,
  type AgentEffectHandlers,
  type AgentEffectsOptions,
  type AgentSpec,
  agentEffects,
  type WorkerAgentSpec,
} from './agent-effects.js';
export { DECISION_KINDS } from './agent-tools.js';
export {
  aiTool,
  loopTool,
  type RoleboxAiTool,
  type RoleboxAiTools,
  sessionTools,
  signalTool,
  stopLoopTool,
} from './ai-sdk.js';
export {
  createMcpServer,
  loadMcpSdk,
  MCP_SDK_PACKAGE,
  type McpSdk,
  type McpSdkLoader,
  type McpServerOptions,
  type McpStdioOptions,
  type McpStdioServer,
  serveMcpOverStdio,
  sessionArtifactsUri,
  sessionViewUri,
} from './mcp-server.js';
export {
  type ApprovedToolContext,
  bindApprovalTools,
  type RequireApprovalOptions,
  requireApproval,
  type ToolApprovalContext,
} from './require-approval.js';
export {
  AGENT_TOOL_NAMES,
  type AnthropicToolDefinition,
  callTool,
  factsOnlyView,
  type HostEventName,
  type JsonSchema,
  type OpenAIToolDefinition,
  ROLEBOX_TOOL_NAMES,
  type RoleboxToolInputs,
  type RoleboxToolName,
  type SendEventToolInput,
  type SessionHostEvent,
  type SessionViewToolInput,
  type SignalToolInput,
  type StartLoopToolInput,
  type StopLoopToolInput,
  type ToolDefinition,
  type ToolDefinitionOptions,
  type ToolDefinitionsByFormat,
  type ToolFormat,
  toolDefinitions,
  toolErrorText,
  toolInputJsonSchema,
} from './tools.js';
