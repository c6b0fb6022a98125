//! Where each quirk was seen in the wild: the provider or server, and a public link.
//!
//! Input: a [`QuirkId`]. Output: a [`Seen`], from an exhaustive match (a new quirk must say
//! where it comes from). docs/quirks.md shows the same, checked by tests/it/quirk_selfcheck.rs.

use super::catalogue::QuirkId;

/// Where a quirk was seen in the wild: the provider or server, and a public link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    pub provider: &'static str,
    pub link: &'static str,
}

const SEED: &str = "docs/rules.md#tool_callarguments_not_string";

impl QuirkId {
    /// Where the failure was seen. Links are public issues; see docs/quirks.md.
    pub fn seen(self) -> Seen {
        let seen = |provider, link| Seen { provider, link };
        match self {
            QuirkId::ArgsAsObjectStream => seen(
                "Ollama behind LiteLLM (streamed tool input arrives whole, as an object)",
                "https://github.com/BerriAI/litellm/issues/25605",
            ),
            QuirkId::ArgsAsObject => seen(
                "self-hosted \"helpful\" OpenAI-compatible servers (the seed article's compatibility case)",
                SEED,
            ),
            QuirkId::ArgsDoubleEncoded => seen(
                "Responses/Chat shims that re-encode arguments (LongCat: arguments that fail JSON parsing)",
                "https://github.com/meituan-longcat/LongCat-2.0/issues/14",
            ),
            QuirkId::ArgsInvalidJson => seen(
                "LongCat-2.0 (arguments that fail JSON parsing)",
                "https://github.com/meituan-longcat/LongCat-2.0/issues/14",
            ),
            QuirkId::ArgsSchemaViolation => seen(
                "any model; Ollama via LiteLLM lost every parameter (input {})",
                "https://github.com/BerriAI/litellm/issues/25605",
            ),
            QuirkId::FinishStopWithCalls => seen(
                "Gemini OpenAI-compatible endpoint, streaming",
                "https://github.com/googleapis/python-genai/issues/2868",
            ),
            QuirkId::FinishMissing => seen(
                "ChatGLM3 (stream never yields the function-call finish_reason)",
                "https://github.com/zai-org/ChatGLM3/issues/1311",
            ),
            QuirkId::FinishRepeated => seen(
                "api-for-open-llm on vLLM (function_call, then stop)",
                "https://github.com/xusenlinzy/api-for-open-llm/issues/193",
            ),
            QuirkId::IndexAllZero => seen(
                "gemini-3.1-pro through a relay",
                "https://github.com/dyedd/lens/issues/49",
            ),
            QuirkId::IndexMissing => seen(
                "Gemini OpenAI-compatible endpoint",
                "https://github.com/openai/openai-python/issues/2806",
            ),
            QuirkId::IdOnEveryChunk => seen(
                "Gemini OpenAI-compatible endpoint (indexless deltas, each a whole call)",
                "https://github.com/open-webui/computer/issues/224",
            ),
            QuirkId::IdChanges => seen(
                "LiteLLM Chat→Responses shim (placeholder ids per item)",
                "https://github.com/openai/chatkit-python/issues/89",
            ),
            QuirkId::NameOnEveryChunk => seen(
                "Gemini OpenAI-compatible endpoint",
                "https://github.com/open-webui/computer/issues/224",
            ),
            QuirkId::NameLate => seen(
                "vLLM (tool-call tail interleaved with content: nameless item)",
                "https://github.com/vllm-project/vllm/pull/52418",
            ),
            QuirkId::NameUndeclared => seen(
                "CLIProxyAPI (custom tool returned under another shape and name)",
                "https://github.com/router-for-me/CLIProxyAPI/issues/5753",
            ),
            QuirkId::ContentEmptyString => seen(
                "vLLM behind LiteLLM (content with tool_calls: [])",
                "https://github.com/BerriAI/litellm/issues/29286",
            ),
            QuirkId::ToolCallsEmptyArray => seen(
                "vLLM behind LiteLLM (content with tool_calls: [])",
                "https://github.com/BerriAI/litellm/issues/29286",
            ),
            QuirkId::ToolChoiceIgnored => seen(
                "OrcaRouter-Lite (functions stripped, plain text returned)",
                "https://github.com/Continuum-AI-Corp/OrcaRouter-Lite/issues/131",
            ),
            QuirkId::DoneMissing => seen(
                "Gemini OpenAI-compatible endpoint and translating gateways",
                "https://github.com/open-webui/computer/issues/224",
            ),
            QuirkId::DataAfterDone => seen(
                "bifrost (frames after the terminal event)",
                "https://github.com/maximhq/bifrost/issues/6419",
            ),
            QuirkId::CutAfterName => seen(
                "LiteLLM /v1/messages over OpenAI-compatible providers (input_json_delta dropped)",
                "https://github.com/BerriAI/litellm/issues/29491",
            ),
            QuirkId::UsageChunkWithoutChoices => seen(
                "Oaklight/llm-rosetta (chunks missing required fields)",
                "https://github.com/Oaklight/llm-rosetta/issues/56",
            ),
            QuirkId::ErrorEventMidstream => seen(
                "Azure via bifrost (error frame after response.failed)",
                "https://github.com/maximhq/bifrost/issues/6419",
            ),
            QuirkId::ResponsesArgsAsObject => seen(
                "Chat→Responses translating shims that forward parsed arguments",
                "docs/rules.md#responsesoutputarguments_not_string",
            ),
            QuirkId::ResponsesNameEmptied => seen(
                "Responses shims that fill a function_call item before its name is known",
                "docs/rules.md#responsesoutputname_unknown",
            ),
            QuirkId::AnthropicInputAsString => seen(
                "OpenAI→Anthropic translating gateways (an OpenAI arguments string copied verbatim as input)",
                "docs/rules.md#anthropicresponsetool_use_input_not_object",
            ),
            QuirkId::AnthropicStopReasonEndTurn => seen(
                "bifrost (text + tool turns ended with end_turn)",
                "https://github.com/maximhq/bifrost/issues/3638",
            ),
            QuirkId::GeminiArgsAsString => seen(
                "OpenAI→Gemini translating gateways (an OpenAI arguments string copied verbatim as args)",
                "docs/rules.md#geminiresponsefunction_call_args_not_object",
            ),
            QuirkId::GeminiParallelCallsCollapsed => seen(
                "clients and gateways that keep one slot per part index (hermes-agent, gemini-cli)",
                "https://github.com/NousResearch/hermes-agent/issues/101654",
            ),
            QuirkId::GeminiFinishReasonFunctionCall => seen(
                "aimock's Gemini routes (tool-call answers default to FUNCTION_CALL)",
                "https://github.com/CopilotKit/aimock/blob/main/src/gemini.ts",
            ),
            QuirkId::GeminiCallNamespaced => seen(
                "gemini-2.5-pro (paloma.x, default_api.x names)",
                "https://github.com/google-gemini/cookbook/issues/1374",
            ),
            QuirkId::OllamaArgsAsString => seen(
                "clients and gateways that replay OpenAI-style string arguments into /api/chat",
                "https://github.com/aliasrobotics/cai/issues/76",
            ),
            QuirkId::OllamaCallSplitAcrossLines => seen(
                "no stated guarantee that a streamed call is one chunk; clients disagree",
                "https://github.com/ollama/ollama/issues/11633",
            ),
            QuirkId::OllamaDoneReasonToolCalls => seen(
                "an Ollama-API emulator (done_reason \"tool_calls\", calls on the done line)",
                "https://github.com/kooshi/llama-swappo/issues/13",
            ),
            QuirkId::BedrockStopReasonEndTurn => seen(
                "bifrost's ConverseStream egress (tool-use turns ended with end_turn; AWS SDK agents never ran the tools)",
                "https://github.com/maximhq/bifrost/issues/5206",
            ),
            QuirkId::BedrockToolUseIdReused => seen(
                "gateways that mint one id per answer (toolResults are matched to toolUse blocks by id)",
                "docs/rules.md#bedrockresponsetool_use_id_duplicate",
            ),
            QuirkId::BedrockEmptyTextStart => seen(
                "a Converse gateway, and aimock's converse-stream (boto3 raises ResponseParserError)",
                "https://github.com/mulgadc/spinifex/issues/844",
            ),
            QuirkId::BedrockInputNotJson => seen(
                "invalid tool-input JSON from the model kept as it came (the replay is then refused)",
                "https://github.com/vercel/ai/issues/19023",
            ),
            QuirkId::BedrockFrameBadCrc => seen(
                "event-stream parsers that skip the CRCs and gateways that rewrite payloads without them",
                "https://github.com/ankit373/hydra/issues/880",
            ),
            QuirkId::McpStructuredContentDropped => seen(
                "a Wasm component host declared outputSchema on every tool and returned text only (Inspector: no structured content)",
                "https://github.com/microsoft/wassette/issues/263",
            ),
            QuirkId::McpOutputOffSchema => seen(
                "the NestJS MCP integration sent structuredContent its own outputSchema rejects",
                "https://github.com/rekog-labs/MCP-Nest/issues/189",
            ),
            QuirkId::McpIdAsString => seen(
                "Python SDK 1.9.4 answered string id \"1\" with integer 1 (Copilot Studio stops after initialize)",
                "https://github.com/modelcontextprotocol/python-sdk/issues/961",
            ),
            QuirkId::McpInputSchemaUntyped => seen(
                "@modelcontextprotocol/server-filesystem 2025.8.21: every inputSchema only {\"$schema\": ...}",
                "https://github.com/modelcontextprotocol/servers/issues/3051",
            ),
            QuirkId::McpUnknownToolAsResult => seen(
                "the official TypeScript 1.x McpServer (and Python 2.x MCPServer) wrap \"tool not found\" into isError",
                "https://github.com/modelcontextprotocol/typescript-sdk/issues/1510",
            ),
            QuirkId::McpContentTypeUnknown => seen(
                "{type: \"json\"} content blocks (Claude Code: \"Invalid tools/call result\")",
                "https://github.com/ElliotPadfield/unpaywall-mcp/issues/4",
            ),
        }
    }
}
