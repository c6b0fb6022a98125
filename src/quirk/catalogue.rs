//! The quirk catalogue: one [`QuirkId`] per real-world way a provider breaks tool calling.
//!
//! Ids are public API (`--quirk`, `--inject`, the `x-tooltap-quirk` header, docs/quirks.md):
//! never renamed or reused. Every per-quirk fact (id, dialect, description, where it was seen,
//! the shapes it applies to, the rules that detect it) comes from an exhaustive `match` with no
//! catch-all arm, so a new variant forces a decision on each. The transformations themselves
//! live in [`super::buffered`] and [`super::stream`].

use std::fmt;
use std::str::FromStr;

use crate::engine::RuleId;

/// The API dialect a quirk rewrites is the engine's [`Dialect`] (decided by the route's
/// `dialect` or the request path): a quirk applies only to an exchange of its own dialect; each
/// dialect has its own transformations (Chat in [`super::buffered`] and [`super::stream`], the
/// others reached through [`super::rewriters`]). Listed by [`Dialect::as_str`].
pub use crate::engine::Dialect;

/// Which kind of response body a quirk is applied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One JSON document (`application/json`).
    Buffered,
    /// Server-sent events (`text/event-stream`).
    Streamed,
}

/// What the request asked for, as far as a quirk's detection depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestKind {
    /// `tool_choice` names one function.
    pub forced_function: bool,
    /// `tool_choice` is `"required"` or names a function: an answer without calls breaks it.
    pub call_required: bool,
    /// Gemini's `allowedFunctionNames` under mode `ANY` or `VALIDATED`: a call to another name
    /// breaks it.
    pub names_restricted: bool,
}

/// A stable identifier of one quirk, written as its kebab-case id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuirkId {
    ArgsAsObject,
    ArgsAsObjectStream,
    ArgsDoubleEncoded,
    ArgsInvalidJson,
    ArgsSchemaViolation,
    FinishStopWithCalls,
    FinishMissing,
    FinishRepeated,
    IndexAllZero,
    IndexMissing,
    IdOnEveryChunk,
    IdChanges,
    NameOnEveryChunk,
    NameLate,
    NameUndeclared,
    ContentEmptyString,
    ToolCallsEmptyArray,
    ToolChoiceIgnored,
    DoneMissing,
    DataAfterDone,
    CutAfterName,
    UsageChunkWithoutChoices,
    ErrorEventMidstream,
    ResponsesArgsAsObject,
    ResponsesNameEmptied,
    AnthropicInputAsString,
    AnthropicStopReasonEndTurn,
    GeminiArgsAsString,
    GeminiParallelCallsCollapsed,
    GeminiFinishReasonFunctionCall,
    GeminiCallNamespaced,
    OllamaArgsAsString,
    OllamaCallSplitAcrossLines,
    OllamaDoneReasonToolCalls,
    BedrockStopReasonEndTurn,
    BedrockToolUseIdReused,
    BedrockEmptyTextStart,
    BedrockInputNotJson,
    BedrockFrameBadCrc,
    McpStructuredContentDropped,
    McpOutputOffSchema,
    McpIdAsString,
    McpInputSchemaUntyped,
    McpUnknownToolAsResult,
    McpContentTypeUnknown,
}

impl QuirkId {
    /// Every quirk, in documentation order.
    pub const ALL: [QuirkId; 45] = [
        QuirkId::ArgsAsObject,
        QuirkId::ArgsAsObjectStream,
        QuirkId::ArgsDoubleEncoded,
        QuirkId::ArgsInvalidJson,
        QuirkId::ArgsSchemaViolation,
        QuirkId::FinishStopWithCalls,
        QuirkId::FinishMissing,
        QuirkId::FinishRepeated,
        QuirkId::IndexAllZero,
        QuirkId::IndexMissing,
        QuirkId::IdOnEveryChunk,
        QuirkId::IdChanges,
        QuirkId::NameOnEveryChunk,
        QuirkId::NameLate,
        QuirkId::NameUndeclared,
        QuirkId::ContentEmptyString,
        QuirkId::ToolCallsEmptyArray,
        QuirkId::ToolChoiceIgnored,
        QuirkId::DoneMissing,
        QuirkId::DataAfterDone,
        QuirkId::CutAfterName,
        QuirkId::UsageChunkWithoutChoices,
        QuirkId::ErrorEventMidstream,
        QuirkId::ResponsesArgsAsObject,
        QuirkId::ResponsesNameEmptied,
        QuirkId::AnthropicInputAsString,
        QuirkId::AnthropicStopReasonEndTurn,
        QuirkId::GeminiArgsAsString,
        QuirkId::GeminiParallelCallsCollapsed,
        QuirkId::GeminiFinishReasonFunctionCall,
        QuirkId::GeminiCallNamespaced,
        QuirkId::OllamaArgsAsString,
        QuirkId::OllamaCallSplitAcrossLines,
        QuirkId::OllamaDoneReasonToolCalls,
        QuirkId::BedrockStopReasonEndTurn,
        QuirkId::BedrockToolUseIdReused,
        QuirkId::BedrockEmptyTextStart,
        QuirkId::BedrockInputNotJson,
        QuirkId::BedrockFrameBadCrc,
        QuirkId::McpStructuredContentDropped,
        QuirkId::McpOutputOffSchema,
        QuirkId::McpIdAsString,
        QuirkId::McpInputSchemaUntyped,
        QuirkId::McpUnknownToolAsResult,
        QuirkId::McpContentTypeUnknown,
    ];

    /// The stable kebab-case id.
    pub fn as_str(self) -> &'static str {
        match self {
            QuirkId::ArgsAsObject => "args-as-object",
            QuirkId::ArgsAsObjectStream => "args-as-object-stream",
            QuirkId::ArgsDoubleEncoded => "args-double-encoded",
            QuirkId::ArgsInvalidJson => "args-invalid-json",
            QuirkId::ArgsSchemaViolation => "args-schema-violation",
            QuirkId::FinishStopWithCalls => "finish-stop-with-calls",
            QuirkId::FinishMissing => "finish-missing",
            QuirkId::FinishRepeated => "finish-repeated",
            QuirkId::IndexAllZero => "index-all-zero",
            QuirkId::IndexMissing => "index-missing",
            QuirkId::IdOnEveryChunk => "id-on-every-chunk",
            QuirkId::IdChanges => "id-changes",
            QuirkId::NameOnEveryChunk => "name-on-every-chunk",
            QuirkId::NameLate => "name-late",
            QuirkId::NameUndeclared => "name-undeclared",
            QuirkId::ContentEmptyString => "content-empty-string",
            QuirkId::ToolCallsEmptyArray => "tool-calls-empty-array",
            QuirkId::ToolChoiceIgnored => "tool-choice-ignored",
            QuirkId::DoneMissing => "done-missing",
            QuirkId::DataAfterDone => "data-after-done",
            QuirkId::CutAfterName => "cut-after-name",
            QuirkId::UsageChunkWithoutChoices => "usage-chunk-without-choices",
            QuirkId::ErrorEventMidstream => "error-event-midstream",
            QuirkId::ResponsesArgsAsObject => "responses-args-as-object",
            QuirkId::ResponsesNameEmptied => "responses-name-emptied",
            QuirkId::AnthropicInputAsString => "anthropic-input-as-string",
            QuirkId::AnthropicStopReasonEndTurn => "anthropic-stop-reason-end-turn",
            QuirkId::GeminiArgsAsString => "gemini-args-as-string",
            QuirkId::GeminiParallelCallsCollapsed => "gemini-parallel-calls-collapsed",
            QuirkId::GeminiFinishReasonFunctionCall => "gemini-finish-reason-function-call",
            QuirkId::GeminiCallNamespaced => "gemini-call-namespaced",
            QuirkId::OllamaArgsAsString => "ollama-args-as-string",
            QuirkId::OllamaCallSplitAcrossLines => "ollama-call-split-across-lines",
            QuirkId::OllamaDoneReasonToolCalls => "ollama-done-reason-tool-calls",
            QuirkId::BedrockStopReasonEndTurn => "bedrock-stop-reason-end-turn",
            QuirkId::BedrockToolUseIdReused => "bedrock-tool-use-id-reused",
            QuirkId::BedrockEmptyTextStart => "bedrock-empty-text-start",
            QuirkId::BedrockInputNotJson => "bedrock-input-not-json",
            QuirkId::BedrockFrameBadCrc => "bedrock-frame-bad-crc",
            QuirkId::McpStructuredContentDropped => "mcp-structured-content-dropped",
            QuirkId::McpOutputOffSchema => "mcp-output-off-schema",
            QuirkId::McpIdAsString => "mcp-id-as-string",
            QuirkId::McpInputSchemaUntyped => "mcp-input-schema-untyped",
            QuirkId::McpUnknownToolAsResult => "mcp-unknown-tool-as-result",
            QuirkId::McpContentTypeUnknown => "mcp-content-type-unknown",
        }
    }

    /// The dialect the quirk rewrites. Which quirks exist for a dialect is the catalogue's own
    /// knowledge (a per-quirk fact, like its description), so it stays in this exhaustive match
    /// rather than in the dialect.
    pub fn dialect(self) -> Dialect {
        match self {
            QuirkId::ArgsAsObject
            | QuirkId::ArgsAsObjectStream
            | QuirkId::ArgsDoubleEncoded
            | QuirkId::ArgsInvalidJson
            | QuirkId::ArgsSchemaViolation
            | QuirkId::FinishStopWithCalls
            | QuirkId::FinishMissing
            | QuirkId::FinishRepeated
            | QuirkId::IndexAllZero
            | QuirkId::IndexMissing
            | QuirkId::IdOnEveryChunk
            | QuirkId::IdChanges
            | QuirkId::NameOnEveryChunk
            | QuirkId::NameLate
            | QuirkId::NameUndeclared
            | QuirkId::ContentEmptyString
            | QuirkId::ToolCallsEmptyArray
            | QuirkId::ToolChoiceIgnored
            | QuirkId::DoneMissing
            | QuirkId::DataAfterDone
            | QuirkId::CutAfterName
            | QuirkId::UsageChunkWithoutChoices
            | QuirkId::ErrorEventMidstream => Dialect::Chat,
            QuirkId::ResponsesArgsAsObject | QuirkId::ResponsesNameEmptied => Dialect::Responses,
            QuirkId::AnthropicInputAsString | QuirkId::AnthropicStopReasonEndTurn => {
                Dialect::Anthropic
            }
            QuirkId::GeminiArgsAsString
            | QuirkId::GeminiParallelCallsCollapsed
            | QuirkId::GeminiFinishReasonFunctionCall
            | QuirkId::GeminiCallNamespaced => Dialect::Gemini,
            QuirkId::OllamaArgsAsString
            | QuirkId::OllamaCallSplitAcrossLines
            | QuirkId::OllamaDoneReasonToolCalls => Dialect::Ollama,
            QuirkId::BedrockStopReasonEndTurn
            | QuirkId::BedrockToolUseIdReused
            | QuirkId::BedrockEmptyTextStart
            | QuirkId::BedrockInputNotJson
            | QuirkId::BedrockFrameBadCrc => Dialect::Bedrock,
            QuirkId::McpStructuredContentDropped
            | QuirkId::McpOutputOffSchema
            | QuirkId::McpIdAsString
            | QuirkId::McpInputSchemaUntyped
            | QuirkId::McpUnknownToolAsResult
            | QuirkId::McpContentTypeUnknown => Dialect::Mcp,
        }
    }

    /// One line: what the quirk does to a healthy exchange.
    pub fn description(self) -> &'static str {
        match self {
            QuirkId::ArgsAsObject => {
                "function.arguments sent as a JSON object instead of a JSON-encoded string (the server parsed the whole message)"
            }
            QuirkId::ArgsAsObjectStream => {
                "streamed arguments fragments left empty, the whole arguments object sent on the finish chunk"
            }
            QuirkId::ArgsDoubleEncoded => {
                "function.arguments JSON-encoded twice: a string that parses to a string"
            }
            QuirkId::ArgsInvalidJson => {
                "function.arguments written with single quotes, Python-dict style: not JSON"
            }
            QuirkId::ArgsSchemaViolation => {
                "arguments parse but break the declared schema (a required property dropped, or an undeclared one added)"
            }
            QuirkId::FinishStopWithCalls => "finish_reason \"stop\" although tool calls came back",
            QuirkId::FinishMissing => {
                "no finish_reason: absent on a buffered choice, never non-null in a stream"
            }
            QuirkId::FinishRepeated => "the finish chunk is sent twice",
            QuirkId::IndexAllZero => "every parallel call's fragments carry index 0",
            QuirkId::IndexMissing => "tool-call fragments carry no index",
            QuirkId::IdOnEveryChunk => "the call id repeated on every fragment of the call",
            QuirkId::IdChanges => "a different call id on every later fragment of the same call",
            QuirkId::NameOnEveryChunk => "the function name repeated on every fragment of the call",
            QuirkId::NameLate => {
                "the function name arrives on the call's second fragment, not its first"
            }
            QuirkId::NameUndeclared => {
                "a function name the request never declared (functions.<name>, a leaked prefix)"
            }
            QuirkId::ContentEmptyString => "content \"\" instead of null next to tool calls",
            QuirkId::ToolCallsEmptyArray => {
                "tool_calls: [] (streams: every tool_calls delta emptied)"
            }
            QuirkId::ToolChoiceIgnored => {
                "a forced or required tool choice answered with prose: the call written out as text, finish_reason \"stop\""
            }
            QuirkId::DoneMissing => "the stream ends without data: [DONE]",
            QuirkId::DataAfterDone => "another chunk after data: [DONE]",
            QuirkId::CutAfterName => {
                "the body ends mid-arguments, right after the function name and a first arguments fragment"
            }
            QuirkId::UsageChunkWithoutChoices => {
                "the usage chunk has no choices key at all (not even [])"
            }
            QuirkId::ErrorEventMidstream => {
                "a data: {\"error\":...} event in the middle of a 200 stream"
            }
            QuirkId::ResponsesArgsAsObject => {
                "a function_call item's arguments sent as the parsed JSON object instead of its JSON text (output[], output_item.done, response.completed)"
            }
            QuirkId::ResponsesNameEmptied => {
                "a function_call item's name sent as \"\" (every item that carries it)"
            }
            QuirkId::AnthropicInputAsString => {
                "a tool_use block's input sent as its JSON text instead of an object"
            }
            QuirkId::AnthropicStopReasonEndTurn => {
                "stop_reason \"end_turn\" although tool_use blocks came back (streams: the message_delta)"
            }
            QuirkId::GeminiArgsAsString => {
                "a functionCall's args sent as its JSON text instead of an object"
            }
            QuirkId::GeminiParallelCallsCollapsed => {
                "a candidate's parallel functionCall parts collapsed into the first, its args their texts concatenated ({\"a\":1}{\"b\":2})"
            }
            QuirkId::GeminiFinishReasonFunctionCall => {
                "finishReason \"FUNCTION_CALL\" (not a Gemini value) instead of \"STOP\" on a candidate that carries a functionCall"
            }
            QuirkId::GeminiCallNamespaced => "a functionCall's name sent as default_api.<name>",
            QuirkId::OllamaArgsAsString => {
                "a tool call's arguments sent as its JSON text instead of an object (the OpenAI shape)"
            }
            QuirkId::OllamaCallSplitAcrossLines => {
                "a streamed call split in two NDJSON lines: its name first, its arguments alone after"
            }
            QuirkId::OllamaDoneReasonToolCalls => {
                "done_reason \"tool_calls\" (not an Ollama value) instead of \"stop\" on a turn with calls"
            }
            QuirkId::BedrockStopReasonEndTurn => {
                "stopReason \"end_turn\" although toolUse blocks came back (streams: the messageStop event)"
            }
            QuirkId::BedrockToolUseIdReused => {
                "every later toolUse block carries the first block's toolUseId"
            }
            QuirkId::BedrockEmptyTextStart => {
                "a streamed text block opened by a contentBlockStart whose start is {}, an empty union"
            }
            QuirkId::BedrockInputNotJson => {
                "streamed toolUse input fragments written with single quotes, Python-dict style: they do not join into JSON"
            }
            QuirkId::BedrockFrameBadCrc => {
                "the first contentBlockDelta event-stream message sent with a wrong message CRC"
            }
            QuirkId::McpStructuredContentDropped => {
                "a tools/call result's structuredContent removed (its text mirror kept), though the tool declares an outputSchema"
            }
            QuirkId::McpOutputOffSchema => {
                "every member of structuredContent sent with another JSON type (a number as its text, a string as its length), off its outputSchema; its text mirror follows"
            }
            QuirkId::McpIdAsString => {
                "a result's id echoed with another type: an integer id as a string (\"1\"), a numeric string id as an integer"
            }
            QuirkId::McpInputSchemaUntyped => {
                "every tools/list inputSchema without its root type (no \"type\": \"object\")"
            }
            QuirkId::McpUnknownToolAsResult => {
                "a JSON-RPC -32602 error (unknown tool) answered as a result with isError: true and the error's text"
            }
            QuirkId::McpContentTypeUnknown => {
                "a {\"type\": \"json\", \"json\": ...} content block added to a tools/call result, a type MCP does not have"
            }
        }
    }

    /// The body shapes the quirk has a transformation for.
    pub fn shapes(self) -> &'static [Shape] {
        const BOTH: &[Shape] = &[Shape::Buffered, Shape::Streamed];
        const STREAM: &[Shape] = &[Shape::Streamed];
        const BUFFERED: &[Shape] = &[Shape::Buffered];
        match self {
            QuirkId::ArgsAsObject | QuirkId::AnthropicInputAsString => BUFFERED,
            // An NDJSON stream's content type is a JSON one: it is rewritten whole, as a
            // buffered body is.
            QuirkId::OllamaArgsAsString
            | QuirkId::OllamaCallSplitAcrossLines
            | QuirkId::OllamaDoneReasonToolCalls => BUFFERED,
            // An event stream is rewritten whole too, message by message; these need its
            // blocks or its framing, which a buffered Converse body does not have.
            QuirkId::BedrockEmptyTextStart
            | QuirkId::BedrockInputNotJson
            | QuirkId::BedrockFrameBadCrc => STREAM,
            QuirkId::BedrockStopReasonEndTurn | QuirkId::BedrockToolUseIdReused => BOTH,
            // One JSON-RPC message, the whole body or one event's data.
            QuirkId::McpStructuredContentDropped
            | QuirkId::McpOutputOffSchema
            | QuirkId::McpIdAsString
            | QuirkId::McpInputSchemaUntyped
            | QuirkId::McpUnknownToolAsResult
            | QuirkId::McpContentTypeUnknown => BOTH,
            QuirkId::ResponsesArgsAsObject
            | QuirkId::ResponsesNameEmptied
            | QuirkId::AnthropicStopReasonEndTurn
            | QuirkId::GeminiArgsAsString
            | QuirkId::GeminiParallelCallsCollapsed
            | QuirkId::GeminiFinishReasonFunctionCall
            | QuirkId::GeminiCallNamespaced => BOTH,
            QuirkId::ArgsDoubleEncoded
            | QuirkId::ArgsInvalidJson
            | QuirkId::ArgsSchemaViolation
            | QuirkId::FinishStopWithCalls
            | QuirkId::FinishMissing
            | QuirkId::NameUndeclared
            | QuirkId::ContentEmptyString
            | QuirkId::ToolCallsEmptyArray
            | QuirkId::ToolChoiceIgnored
            | QuirkId::CutAfterName => BOTH,
            QuirkId::ArgsAsObjectStream
            | QuirkId::FinishRepeated
            | QuirkId::IndexAllZero
            | QuirkId::IndexMissing
            | QuirkId::IdOnEveryChunk
            | QuirkId::IdChanges
            | QuirkId::NameOnEveryChunk
            | QuirkId::NameLate
            | QuirkId::DoneMissing
            | QuirkId::DataAfterDone
            | QuirkId::UsageChunkWithoutChoices
            | QuirkId::ErrorEventMidstream => STREAM,
        }
    }

    /// The rules the engine reports on a transformed healthy exchange of this shape, exactly
    /// (the self-check test holds the catalogue to it). Empty: tooltap has no rule for it.
    pub fn detected_by(self, shape: Shape, request: RequestKind) -> Vec<RuleId> {
        use RuleId as R;
        let stream = shape == Shape::Streamed;
        let mut rules = match self {
            QuirkId::ArgsAsObjectStream => {
                vec![R::DeltaArgumentsNotString, R::ToolCallArgumentsNotString]
            }
            QuirkId::ArgsAsObject => vec![R::ToolCallArgumentsNotString],
            QuirkId::ArgsDoubleEncoded => vec![R::ToolCallArgumentsNotObject],
            QuirkId::ArgsInvalidJson => vec![R::ToolCallArgumentsNotJson],
            QuirkId::ArgsSchemaViolation => vec![R::ToolCallArgumentsSchema],
            // A named tool_choice answered "stop" is what OpenAI itself does: its own rule.
            QuirkId::FinishStopWithCalls if request.forced_function => {
                vec![R::FinishReasonStopOnNamedChoice]
            }
            QuirkId::FinishStopWithCalls => vec![R::FinishReasonNotToolCalls],
            QuirkId::FinishMissing if stream => vec![R::StreamTruncated],
            QuirkId::FinishMissing => vec![R::FinishReasonInvalid],
            QuirkId::FinishRepeated => vec![R::FinishReasonRepeated],
            QuirkId::IndexAllZero => vec![
                R::DeltaIdChanged,
                R::DeltaNameRepeated,
                R::ToolCallArgumentsNotJson,
            ],
            QuirkId::IndexMissing => vec![R::DeltaIndexMissing],
            QuirkId::IdOnEveryChunk => vec![R::DeltaIdRepeated],
            QuirkId::IdChanges => vec![R::DeltaIdChanged],
            QuirkId::NameOnEveryChunk => vec![R::DeltaNameRepeated],
            QuirkId::NameLate => vec![R::DeltaNameLate],
            QuirkId::NameUndeclared => vec![R::ToolCallNameUndeclared],
            QuirkId::ContentEmptyString => vec![],
            QuirkId::ToolCallsEmptyArray if stream => vec![],
            QuirkId::ToolCallsEmptyArray => vec![R::ToolCallsEmpty],
            QuirkId::ToolChoiceIgnored => vec![],
            QuirkId::DoneMissing => vec![R::SseDoneMissing],
            QuirkId::DataAfterDone => vec![R::SseDataAfterDone],
            QuirkId::CutAfterName if stream => vec![
                R::SseDoneMissing,
                R::StreamTruncated,
                R::ToolCallArgumentsNotJson,
            ],
            QuirkId::CutAfterName => vec![R::ResponseNotJson],
            QuirkId::UsageChunkWithoutChoices => vec![R::ResponseShapeInvalid],
            QuirkId::ErrorEventMidstream => vec![R::SseErrorEvent],
            QuirkId::ResponsesArgsAsObject => vec![R::ResponsesOutputArgumentsNotString],
            QuirkId::ResponsesNameEmptied => vec![R::ResponsesOutputNameUnknown],
            QuirkId::AnthropicInputAsString => vec![R::AnthropicResponseToolUseInputNotObject],
            QuirkId::AnthropicStopReasonEndTurn if stream => {
                vec![R::AnthropicStreamStopReasonMismatch]
            }
            QuirkId::AnthropicStopReasonEndTurn => vec![R::AnthropicResponseStopReasonMismatch],
            QuirkId::GeminiArgsAsString | QuirkId::GeminiParallelCallsCollapsed => {
                vec![R::GeminiResponseFunctionCallArgsNotObject]
            }
            QuirkId::GeminiFinishReasonFunctionCall => vec![R::GeminiResponseFinishReasonUnknown],
            QuirkId::GeminiCallNamespaced => vec![
                R::GeminiResponseFunctionCallNamespaced,
                R::GeminiResponseFunctionCallUndeclared,
            ],
            QuirkId::OllamaArgsAsString => vec![R::OllamaResponseArgumentsNotObject],
            // The name line has no arguments; the arguments line has no name.
            QuirkId::OllamaCallSplitAcrossLines => vec![
                R::OllamaResponseArgumentsNotObject,
                R::OllamaResponseToolNameMissing,
            ],
            QuirkId::OllamaDoneReasonToolCalls => vec![R::OllamaResponseDoneReasonUnknown],
            // A stream's message rules judge the reassembled message: the same rule.
            QuirkId::BedrockStopReasonEndTurn => vec![R::BedrockResponseCallWithoutStopToolUse],
            QuirkId::BedrockToolUseIdReused => vec![R::BedrockResponseToolUseIdDuplicate],
            QuirkId::BedrockEmptyTextStart => vec![R::BedrockStreamEmptyStartUnion],
            // The block's input is unreadable: no schema or object rule judges it further.
            QuirkId::BedrockInputNotJson => vec![R::BedrockStreamToolInputNotJsonObject],
            // Decoding stops at the bad message: nothing after it is judged.
            QuirkId::BedrockFrameBadCrc => vec![R::BedrockFrameMessageCrcMismatch],
            // Need the conversation's catalogue (the store judges them, live and in `check`):
            // structured_content_missing, structured_content_schema, unknown_tool_as_result.
            QuirkId::McpStructuredContentDropped
            | QuirkId::McpOutputOffSchema
            | QuirkId::McpUnknownToolAsResult => vec![],
            QuirkId::McpIdAsString => vec![R::McpJsonrpcResponseIdMismatch],
            QuirkId::McpInputSchemaUntyped => vec![R::McpToolsListInputSchemaNotObject],
            QuirkId::McpContentTypeUnknown => vec![R::McpContentTypeUnknown],
        };
        // The calls are gone (or cannot be placed): a request that required one notices.
        let calls_lost = matches!(
            self,
            QuirkId::IndexMissing | QuirkId::ToolCallsEmptyArray | QuirkId::ToolChoiceIgnored
        );
        if calls_lost && request.call_required {
            rules.push(R::ToolChoiceIgnored);
        }
        if self == QuirkId::NameUndeclared && request.forced_function {
            rules.push(R::ToolChoiceWrongFunction);
        }
        if self == QuirkId::GeminiCallNamespaced && request.names_restricted {
            rules.push(R::GeminiResponseFunctionCallNotAllowed);
        }
        rules.sort();
        rules
    }

    /// Every rule that may detect the quirk, whatever the shape or request (for listings).
    pub fn all_rules(self) -> Vec<RuleId> {
        let mut rules = Vec::new();
        for &shape in self.shapes() {
            for (forced_function, call_required) in [(false, false), (false, true), (true, true)] {
                for names_restricted in [false, true] {
                    let request = RequestKind {
                        forced_function,
                        call_required,
                        names_restricted,
                    };
                    rules.extend(self.detected_by(shape, request));
                }
            }
        }
        rules.sort();
        rules.dedup();
        rules
    }
}

/// A string that names no quirk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown quirk {0:?} (tooltap quirks lists them)")]
pub struct UnknownQuirk(pub String);

impl FromStr for QuirkId {
    type Err = UnknownQuirk;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        QuirkId::ALL
            .iter()
            .copied()
            .find(|quirk| quirk.as_str() == text.trim())
            .ok_or_else(|| UnknownQuirk(text.to_owned()))
    }
}

impl fmt::Display for QuirkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
