//! The catalogue of contract rules: one [`RuleId`] per thing tooltap can object to.
//!
//! Ids are public API (logs, metrics, recordings, `docs/rules.md`): never rename or reuse one.
//! The catalogue is one table below, a row per rule: variant, stable `family.name` id, default
//! severity. The `rules!` macro turns it into the enum, [`RuleId::ALL`] and the exhaustive
//! matches behind [`RuleId::as_str`] and [`RuleId::default_severity`], so adding a rule is one
//! row and cannot forget either fact. The checks in the dialect modules produce these ids;
//! [`crate::engine::violation`] carries them out.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::severity::Severity;

/// Writes the enum and its per-rule facts from the table of rows `Variant => "id", Severity;`.
macro_rules! rules {
    ($($variant:ident => $id:literal, $severity:ident;)*) => {
        /// A stable identifier of one contract rule, serialized as its `family.name` string.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RuleId {
            $($variant,)*
        }

        impl RuleId {
            /// Every rule, in documentation order.
            pub const ALL: [RuleId; [$($id),*].len()] = [$(RuleId::$variant,)*];

            /// The stable `family.name` id.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(RuleId::$variant => $id,)*
                }
            }

            /// The severity a rule has unless [`crate::engine::SeverityOverrides`] says
            /// otherwise. Warnings are the things clients commonly survive (a repeated id, a
            /// skipped index) or that say more about the request than the response (an invalid
            /// declared schema).
            pub fn default_severity(self) -> Severity {
                match self {
                    $(RuleId::$variant => Severity::$severity,)*
                }
            }
        }
    };
}

rules! {
    // Chat Completions tools and tool_calls (docs/rules.md)
    RequestSchemaInvalid => "request.schema_invalid", Warning;
    ResponseNotJson => "response.not_json", Error;
    ResponseShapeInvalid => "response.shape_invalid", Error;
    ResponseStreamMismatch => "response.stream_mismatch", Warning;
    FinishReasonNotToolCalls => "finish_reason.not_tool_calls", Error;
    FinishReasonInvalid => "finish_reason.invalid", Error;
    FinishReasonRepeated => "finish_reason.repeated", Error;
    FinishReasonStopOnNamedChoice => "finish_reason.stop_on_named_choice", Warning;
    MessageContentType => "message.content_type", Error;
    ToolCallsEmpty => "tool_calls.empty", Error;
    ToolCallsParallelDisallowed => "tool_calls.parallel_disallowed", Warning;
    ToolCallIdMissing => "tool_call.id_missing", Error;
    ToolCallIdDuplicate => "tool_call.id_duplicate", Error;
    ToolCallTypeInvalid => "tool_call.type_invalid", Error;
    ToolCallNameMissing => "tool_call.name_missing", Error;
    ToolCallNameUndeclared => "tool_call.name_undeclared", Error;
    ToolCallArgumentsNotString => "tool_call.arguments_not_string", Error;
    ToolCallArgumentsNotJson => "tool_call.arguments_not_json", Error;
    ToolCallArgumentsNotObject => "tool_call.arguments_not_object", Error;
    ToolCallArgumentsSchema => "tool_call.arguments_schema", Error;
    ToolChoiceIgnored => "tool_choice.ignored", Error;
    ToolChoiceWrongFunction => "tool_choice.wrong_function", Error;
    ToolChoiceNoneViolated => "tool_choice.none_violated", Error;
    SseDataNotJson => "sse.data_not_json", Error;
    SseDoneMissing => "sse.done_missing", Error;
    SseDataAfterDone => "sse.data_after_done", Error;
    SseErrorEvent => "sse.error_event", Error;
    StreamTruncated => "stream.truncated", Error;
    DeltaIndexMissing => "delta.index_missing", Error;
    DeltaIndexInvalid => "delta.index_invalid", Warning;
    DeltaIdRepeated => "delta.id_repeated", Warning;
    DeltaIdChanged => "delta.id_changed", Error;
    DeltaNameRepeated => "delta.name_repeated", Warning;
    DeltaNameChanged => "delta.name_changed", Error;
    DeltaNameLate => "delta.name_late", Error;
    DeltaArgumentsNotString => "delta.arguments_not_string", Error;
    // Chat legacy functions, custom tools, allowed_tools (dialects.md §2)
    ChatLegacyRequestFunctionsCountInvalid => "chat_legacy.request.functions_count_invalid", Error;
    ChatLegacyRequestFunctionNameInvalid => "chat_legacy.request.function_name_invalid", Error;
    ChatLegacyRequestFunctionNameDuplicate => "chat_legacy.request.function_name_duplicate", Error;
    ChatLegacyRequestFunctionCallUnknownName => "chat_legacy.request.function_call_unknown_name", Error;
    ChatLegacyRequestFunctionCallWithoutFunctions => "chat_legacy.request.function_call_without_functions", Warning;
    ChatLegacyRequestMixedFunctionsAndTools => "chat_legacy.request.mixed_functions_and_tools", Warning;
    ChatLegacyRequestFunctionMessageInvalid => "chat_legacy.request.function_message_invalid", Error;
    ChatLegacyResponseSwitchedToToolCalls => "chat_legacy.response.switched_to_tool_calls", Error;
    ChatLegacyResponseSwitchedToFunctionCall => "chat_legacy.response.switched_to_function_call", Error;
    ChatLegacyResponseFunctionCallFieldsMissing => "chat_legacy.response.function_call_fields_missing", Error;
    ChatLegacyResponseArgumentsNotString => "chat_legacy.response.arguments_not_string", Error;
    ChatLegacyResponseArgumentsInvalidJson => "chat_legacy.response.arguments_invalid_json", Error;
    ChatLegacyResponseArgumentsSchemaMismatch => "chat_legacy.response.arguments_schema_mismatch", Warning;
    ChatLegacyResponseNameUnknown => "chat_legacy.response.name_unknown", Error;
    ChatLegacyResponseFinishReasonMismatch => "chat_legacy.response.finish_reason_mismatch", Error;
    ChatLegacyResponseMultipleCalls => "chat_legacy.response.multiple_calls", Error;
    ChatLegacyFunctionCallNoneViolated => "chat_legacy.function_call.none_violated", Error;
    ChatLegacyFunctionCallForcedViolated => "chat_legacy.function_call.forced_violated", Error;
    ChatLegacyStreamArgumentsBeforeName => "chat_legacy.stream.arguments_before_name", Error;
    ChatLegacyStreamNameRepeated => "chat_legacy.stream.name_repeated", Warning;
    ChatLegacyStreamMixedWithToolCalls => "chat_legacy.stream.mixed_with_tool_calls", Error;
    ChatLegacyStreamFinishReasonMissing => "chat_legacy.stream.finish_reason_missing", Error;
    ChatCustomRequestToolShapeInvalid => "chat_custom.request.tool_shape_invalid", Error;
    ChatCustomRequestGrammarShapeInvalid => "chat_custom.request.grammar_shape_invalid", Error;
    ChatCustomRequestToolChoiceUnknown => "chat_custom.request.tool_choice_unknown", Error;
    ChatCustomResponseCallShapeInvalid => "chat_custom.response.call_shape_invalid", Error;
    ChatCustomResponseInputNotString => "chat_custom.response.input_not_string", Error;
    ChatCustomResponseCalledAsFunction => "chat_custom.response.called_as_function", Error;
    ChatCustomResponseInputJsonWrapped => "chat_custom.response.input_json_wrapped", Warning;
    ChatCustomResponseGrammarMismatch => "chat_custom.response.grammar_mismatch", Warning;
    ChatCustomStreamFragmentKindMismatch => "chat_custom.stream.fragment_kind_mismatch", Warning;
    ChatCustomStreamIndexMissing => "chat_custom.stream.index_missing", Error;
    ChatAllowedRequestShapeInvalid => "chat_allowed.request.shape_invalid", Error;
    ChatAllowedRequestUnknownTool => "chat_allowed.request.unknown_tool", Error;
    ChatAllowedResponseToolNotAllowed => "chat_allowed.response.tool_not_allowed", Error;
    ChatAllowedResponseRequiredViolated => "chat_allowed.response.required_violated", Error;
    // The Responses API (dialects.md §1)
    ResponsesRequestToolShapeChatStyle => "responses.request.tool_shape_chat_style", Error;
    ResponsesRequestToolNameInvalid => "responses.request.tool_name_invalid", Error;
    ResponsesRequestToolNameDuplicate => "responses.request.tool_name_duplicate", Error;
    ResponsesRequestParametersNotObjectSchema => "responses.request.parameters_not_object_schema", Warning;
    ResponsesRequestStrictSchemaIncompatible => "responses.request.strict_schema_incompatible", Warning;
    ResponsesRequestCustomFormatInvalid => "responses.request.custom_format_invalid", Error;
    ResponsesRequestToolChoiceUnknownTool => "responses.request.tool_choice_unknown_tool", Error;
    ResponsesRequestAllowedToolsUnknownTool => "responses.request.allowed_tools_unknown_tool", Error;
    ResponsesRequestToolChoiceWithoutTools => "responses.request.tool_choice_without_tools", Warning;
    ResponsesRequestFunctionCallOutputOrphan => "responses.request.function_call_output_orphan", Warning;
    ResponsesRequestCallIdTooLong => "responses.request.call_id_too_long", Error;
    ResponsesOutputEnvelopeInvalid => "responses.output.envelope_invalid", Error;
    ResponsesOutputCallIdMissing => "responses.output.call_id_missing", Error;
    ResponsesOutputCallIdDuplicate => "responses.output.call_id_duplicate", Error;
    ResponsesOutputItemIdMissing => "responses.output.item_id_missing", Warning;
    ResponsesOutputNameUnknown => "responses.output.name_unknown", Error;
    ResponsesOutputArgumentsNotString => "responses.output.arguments_not_string", Error;
    ResponsesOutputArgumentsInvalidJson => "responses.output.arguments_invalid_json", Error;
    ResponsesOutputArgumentsSchemaMismatch => "responses.output.arguments_schema_mismatch", Error;
    ResponsesOutputCustomInputNotString => "responses.output.custom_input_not_string", Error;
    ResponsesOutputCustomCalledAsFunction => "responses.output.custom_called_as_function", Error;
    ResponsesOutputCustomInputJsonWrapped => "responses.output.custom_input_json_wrapped", Warning;
    ResponsesOutputCustomGrammarMismatch => "responses.output.custom_grammar_mismatch", Warning;
    ResponsesOutputToolMarkupInText => "responses.output.tool_markup_in_text", Warning;
    ResponsesOutputStatusInconsistent => "responses.output.status_inconsistent", Error;
    ResponsesToolChoiceNoneViolated => "responses.tool_choice.none_violated", Error;
    ResponsesToolChoiceRequiredViolated => "responses.tool_choice.required_violated", Error;
    ResponsesToolChoiceForcedViolated => "responses.tool_choice.forced_violated", Error;
    ResponsesToolChoiceAllowedToolsViolated => "responses.tool_choice.allowed_tools_violated", Error;
    ResponsesToolChoiceParallelViolated => "responses.tool_choice.parallel_violated", Error;
    ResponsesStreamEventNameMismatch => "responses.stream.event_name_mismatch", Error;
    ResponsesStreamUnknownEventType => "responses.stream.unknown_event_type", Warning;
    ResponsesStreamSequenceNumberMissing => "responses.stream.sequence_number_missing", Warning;
    ResponsesStreamSequenceNumberNotMonotonic => "responses.stream.sequence_number_not_monotonic", Error;
    ResponsesStreamDeltaWithoutItem => "responses.stream.delta_without_item", Error;
    ResponsesStreamItemIdOutputIndexMismatch => "responses.stream.item_id_output_index_mismatch", Error;
    ResponsesStreamOutputIndexCollision => "responses.stream.output_index_collision", Error;
    ResponsesStreamDeltaKindMismatch => "responses.stream.delta_kind_mismatch", Error;
    ResponsesStreamEventAfterItemDone => "responses.stream.event_after_item_done", Error;
    ResponsesStreamArgumentsDoneMismatch => "responses.stream.arguments_done_mismatch", Error;
    ResponsesStreamItemDoneMismatch => "responses.stream.item_done_mismatch", Error;
    ResponsesStreamItemNotDone => "responses.stream.item_not_done", Error;
    ResponsesStreamToolMarkupAsTextDelta => "responses.stream.tool_markup_as_text_delta", Warning;
    ResponsesStreamTerminalMissing => "responses.stream.terminal_missing", Error;
    ResponsesStreamEventAfterTerminal => "responses.stream.event_after_terminal", Error;
    ResponsesStreamTerminalOutputMismatch => "responses.stream.terminal_output_mismatch", Error;
    ResponsesStreamTerminalEnvelopeInvalid => "responses.stream.terminal_envelope_invalid", Error;
    ResponsesStreamDoneSentinel => "responses.stream.done_sentinel", Warning;
    ResponsesStreamErrorEventInvalid => "responses.stream.error_event_invalid", Error;
    // Anthropic Messages (dialects.md §3)
    AnthropicRequestOpenaiToolShape => "anthropic.request.openai_tool_shape", Error;
    AnthropicRequestToolNameInvalid => "anthropic.request.tool_name_invalid", Error;
    AnthropicRequestInputSchemaInvalid => "anthropic.request.input_schema_invalid", Error;
    AnthropicRequestToolChoiceInvalid => "anthropic.request.tool_choice_invalid", Error;
    AnthropicRequestToolUseUnanswered => "anthropic.request.tool_use_unanswered", Error;
    AnthropicRequestToolResultNotLeading => "anthropic.request.tool_result_not_leading", Error;
    AnthropicRequestToolResultOrphan => "anthropic.request.tool_result_orphan", Error;
    AnthropicRequestHistoryToolUseInputNotObject => "anthropic.request.history_tool_use_input_not_object", Error;
    AnthropicResponseEnvelopeInvalid => "anthropic.response.envelope_invalid", Error;
    AnthropicResponseToolUseInputNotObject => "anthropic.response.tool_use_input_not_object", Error;
    AnthropicResponseToolUseIdMissing => "anthropic.response.tool_use_id_missing", Error;
    AnthropicResponseToolUseIdDuplicate => "anthropic.response.tool_use_id_duplicate", Error;
    AnthropicResponseToolUseIdFormat => "anthropic.response.tool_use_id_format", Warning;
    AnthropicResponseToolUseNameUnknown => "anthropic.response.tool_use_name_unknown", Error;
    AnthropicResponseToolUseInputSchemaMismatch => "anthropic.response.tool_use_input_schema_mismatch", Error;
    AnthropicResponseStopReasonMismatch => "anthropic.response.stop_reason_mismatch", Error;
    AnthropicResponseStopReasonUnknown => "anthropic.response.stop_reason_unknown", Warning;
    AnthropicResponseToolMarkupInText => "anthropic.response.tool_markup_in_text", Warning;
    AnthropicToolChoiceNoneViolated => "anthropic.tool_choice.none_violated", Error;
    AnthropicToolChoiceAnyViolated => "anthropic.tool_choice.any_violated", Error;
    AnthropicToolChoiceToolViolated => "anthropic.tool_choice.tool_violated", Error;
    AnthropicToolChoiceParallelViolated => "anthropic.tool_choice.parallel_violated", Error;
    AnthropicStreamEventNameMismatch => "anthropic.stream.event_name_mismatch", Error;
    AnthropicStreamOpenaiChunksReturned => "anthropic.stream.openai_chunks_returned", Error;
    AnthropicStreamFirstEventNotMessageStart => "anthropic.stream.first_event_not_message_start", Error;
    AnthropicStreamMessageStartDuplicate => "anthropic.stream.message_start_duplicate", Error;
    AnthropicStreamMessageStartNotEmpty => "anthropic.stream.message_start_not_empty", Warning;
    AnthropicStreamBlockIndexNotSequential => "anthropic.stream.block_index_not_sequential", Error;
    AnthropicStreamDeltaUnknownBlock => "anthropic.stream.delta_unknown_block", Error;
    AnthropicStreamDeltaTypeMismatch => "anthropic.stream.delta_type_mismatch", Error;
    AnthropicStreamToolUseStartInvalid => "anthropic.stream.tool_use_start_invalid", Error;
    AnthropicStreamToolUseStartInputPrefilled => "anthropic.stream.tool_use_start_input_prefilled", Warning;
    AnthropicStreamPartialJsonInvalid => "anthropic.stream.partial_json_invalid", Error;
    AnthropicStreamMergedToolInputs => "anthropic.stream.merged_tool_inputs", Error;
    AnthropicStreamBlocksInterleaved => "anthropic.stream.blocks_interleaved", Warning;
    AnthropicStreamBlockNotStopped => "anthropic.stream.block_not_stopped", Error;
    AnthropicStreamMessageDeltaMissing => "anthropic.stream.message_delta_missing", Error;
    AnthropicStreamMessageDeltaUsageMissing => "anthropic.stream.message_delta_usage_missing", Warning;
    AnthropicStreamStopReasonMismatch => "anthropic.stream.stop_reason_mismatch", Error;
    AnthropicStreamTerminalMissing => "anthropic.stream.terminal_missing", Error;
    AnthropicStreamEventAfterMessageStop => "anthropic.stream.event_after_message_stop", Error;
    AnthropicStreamErrorEventInvalid => "anthropic.stream.error_event_invalid", Error;
    AnthropicStreamUnknownEventType => "anthropic.stream.unknown_event_type", Warning;
    // Google Gemini generateContent / streamGenerateContent (gemini-bedrock-ollama.md §1(f))
    GeminiRequestFunctionNameInvalid => "gemini.request.function_name_invalid", Error;
    GeminiRequestFunctionNameOver64 => "gemini.request.function_name_over_64", Warning;
    GeminiRequestDuplicateFunctionName => "gemini.request.duplicate_function_name", Warning;
    GeminiRequestParametersAndJsonSchemaBoth => "gemini.request.parameters_and_json_schema_both", Error;
    GeminiRequestParametersJsonSchemaNotObject => "gemini.request.parameters_json_schema_not_object", Error;
    GeminiRequestObjectWithoutProperties => "gemini.request.object_without_properties", Warning;
    GeminiRequestAllowedNameUndeclared => "gemini.request.allowed_name_undeclared", Error;
    GeminiRequestAllowedNamesWithoutAny => "gemini.request.allowed_names_without_any", Warning;
    GeminiRequestModeAnyWithoutDeclarations => "gemini.request.mode_any_without_declarations", Warning;
    GeminiRequestStreamArgsOnGeminiApi => "gemini.request.stream_args_on_gemini_api", Warning;
    GeminiRequestFunctionResponseCountMismatch => "gemini.request.function_response_count_mismatch", Error;
    GeminiRequestFunctionResponseNameMismatch => "gemini.request.function_response_name_mismatch", Error;
    GeminiRequestFunctionResponseIdMismatch => "gemini.request.function_response_id_mismatch", Warning;
    GeminiRequestFunctionResponseNotObject => "gemini.request.function_response_not_object", Error;
    GeminiRequestReplayedArgsNotObject => "gemini.request.replayed_args_not_object", Error;
    GeminiRequestMissingThoughtSignature => "gemini.request.missing_thought_signature", Error;
    GeminiRequestThoughtSignatureSentinel => "gemini.request.thought_signature_sentinel", Warning;
    GeminiResponseFinishReasonUnknown => "gemini.response.finish_reason_unknown", Error;
    GeminiResponseFunctionCallArgsNotObject => "gemini.response.function_call_args_not_object", Error;
    GeminiResponseFunctionCallNameMissing => "gemini.response.function_call_name_missing", Error;
    GeminiResponseFunctionCallUndeclared => "gemini.response.function_call_undeclared", Error;
    GeminiResponseFunctionCallNamespaced => "gemini.response.function_call_namespaced", Warning;
    GeminiResponseFunctionCallNotAllowed => "gemini.response.function_call_not_allowed", Error;
    GeminiResponseFunctionCallUnderModeNone => "gemini.response.function_call_under_mode_none", Error;
    GeminiResponseNoCallUnderModeAny => "gemini.response.no_call_under_mode_any", Error;
    GeminiResponseArgsSchemaViolation => "gemini.response.args_schema_violation", Error;
    GeminiResponseFunctionCallIdDuplicate => "gemini.response.function_call_id_duplicate", Error;
    GeminiResponseMalformedWithCall => "gemini.response.malformed_with_call", Error;
    GeminiResponseMalformedFunctionCall => "gemini.response.malformed_function_call", Warning;
    GeminiResponseMaxTokensWithCall => "gemini.response.max_tokens_with_call", Warning;
    GeminiResponseNoCandidatesWithoutBlock => "gemini.response.no_candidates_without_block", Error;
    GeminiResponseServerToolPart => "gemini.response.server_tool_part", Warning;
    GeminiStreamNotSse => "gemini.stream.not_sse", Error;
    GeminiStreamJsonArrayFraming => "gemini.stream.json_array_framing", Warning;
    GeminiStreamDataWithoutSpace => "gemini.stream.data_without_space", Warning;
    GeminiStreamDoneSentinel => "gemini.stream.done_sentinel", Warning;
    GeminiStreamEventNotJson => "gemini.stream.event_not_json", Error;
    GeminiStreamFunctionCallSplit => "gemini.stream.function_call_split", Error;
    GeminiStreamFunctionCallRepeated => "gemini.stream.function_call_repeated", Warning;
    GeminiStreamCumulativeSnapshots => "gemini.stream.cumulative_snapshots", Warning;
    GeminiStreamContentAfterFinish => "gemini.stream.content_after_finish", Error;
    GeminiStreamNoFinishReason => "gemini.stream.no_finish_reason", Error;
    GeminiStreamErrorInStream => "gemini.stream.error_in_stream", Warning;
    // Ollama native /api/chat (gemini-bedrock-ollama.md §3(f), §3(j))
    OllamaRequestToolTypeNotFunction => "ollama.request.tool_type_not_function", Error;
    OllamaRequestToolMissingParameters => "ollama.request.tool_missing_parameters", Warning;
    OllamaRequestArgumentsNotObject => "ollama.request.arguments_not_object", Error;
    OllamaRequestContentNotString => "ollama.request.content_not_string", Error;
    OllamaRequestToolChoiceIgnored => "ollama.request.tool_choice_ignored", Warning;
    OllamaRequestToolResultUnnamed => "ollama.request.tool_result_unnamed", Warning;
    OllamaResponseNotJson => "ollama.response.not_json", Error;
    OllamaResponseArgumentsNotObject => "ollama.response.arguments_not_object", Error;
    OllamaResponseToolNameMissing => "ollama.response.tool_name_missing", Error;
    OllamaResponseToolCallUndeclared => "ollama.response.tool_call_undeclared", Error;
    OllamaResponseToolCallIdDuplicate => "ollama.response.tool_call_id_duplicate", Error;
    OllamaResponseToolIndexInconsistent => "ollama.response.tool_index_inconsistent", Warning;
    OllamaResponseArgsSchemaViolation => "ollama.response.args_schema_violation", Warning;
    OllamaResponseToolCallInContent => "ollama.response.tool_call_in_content", Warning;
    OllamaResponseDoneReasonUnknown => "ollama.response.done_reason_unknown", Warning;
    OllamaResponseLengthWithToolCalls => "ollama.response.length_with_tool_calls", Warning;
    OllamaStreamContentType => "ollama.stream.content_type", Warning;
    OllamaStreamLineNotJson => "ollama.stream.line_not_json", Error;
    OllamaStreamErrorLine => "ollama.stream.error_line", Warning;
    OllamaStreamNoDone => "ollama.stream.no_done", Error;
    OllamaStreamAfterDone => "ollama.stream.after_done", Error;
    OllamaStreamToolCallsOnDone => "ollama.stream.tool_calls_on_done", Warning;
    OllamaStreamToolCallRepeated => "ollama.stream.tool_call_repeated", Warning;
    // AWS Bedrock Converse / ConverseStream (gemini-bedrock-ollama.md §2(f), readings §3(j))
    BedrockRequestToolNameInvalid => "bedrock.request.tool_name_invalid", Error;
    BedrockRequestInputSchemaNotObject => "bedrock.request.input_schema_not_object", Error;
    BedrockRequestToolSpecIncomplete => "bedrock.request.tool_spec_incomplete", Error;
    BedrockRequestUnionNotSingle => "bedrock.request.union_not_single", Error;
    BedrockRequestToolChoiceUndeclared => "bedrock.request.tool_choice_undeclared", Error;
    BedrockRequestToolChoiceModelSupport => "bedrock.request.tool_choice_model_support", Warning;
    BedrockRequestToolHistoryWithoutConfig => "bedrock.request.tool_history_without_config", Error;
    BedrockRequestToolResultMissing => "bedrock.request.tool_result_missing", Error;
    BedrockRequestToolUseInputNotObject => "bedrock.request.tool_use_input_not_object", Error;
    BedrockRequestToolResultJsonNotObject => "bedrock.request.tool_result_json_not_object", Error;
    BedrockRequestToolUseIdInvalid => "bedrock.request.tool_use_id_invalid", Error;
    BedrockResponseNotJson => "bedrock.response.not_json", Error;
    BedrockResponseStopReasonUnknown => "bedrock.response.stop_reason_unknown", Error;
    BedrockResponseStopToolUseWithoutCall => "bedrock.response.stop_tool_use_without_call", Error;
    BedrockResponseCallWithoutStopToolUse => "bedrock.response.call_without_stop_tool_use", Error;
    BedrockResponseToolUseInputNotObject => "bedrock.response.tool_use_input_not_object", Error;
    BedrockResponseToolUseUndeclared => "bedrock.response.tool_use_undeclared", Error;
    BedrockResponseToolUseIdInvalid => "bedrock.response.tool_use_id_invalid", Error;
    BedrockResponseToolUseIdDuplicate => "bedrock.response.tool_use_id_duplicate", Error;
    BedrockResponseChoiceAnyNoCall => "bedrock.response.choice_any_no_call", Error;
    BedrockResponseChoiceToolWrongName => "bedrock.response.choice_tool_wrong_name", Error;
    BedrockResponseInputSchemaViolation => "bedrock.response.input_schema_violation", Error;
    BedrockResponseMalformedStop => "bedrock.response.malformed_stop", Warning;
    BedrockFramePreludeCrcMismatch => "bedrock.frame.prelude_crc_mismatch", Error;
    BedrockFrameMessageCrcMismatch => "bedrock.frame.message_crc_mismatch", Error;
    BedrockFrameLengthInvalid => "bedrock.frame.length_invalid", Error;
    BedrockFrameHeaderTypeUnknown => "bedrock.frame.header_type_unknown", Error;
    BedrockFrameTruncated => "bedrock.frame.truncated", Error;
    BedrockFrameMissingEventType => "bedrock.frame.missing_event_type", Error;
    BedrockFramePayloadNotJson => "bedrock.frame.payload_not_json", Error;
    BedrockStreamHttpContentType => "bedrock.stream.http_content_type", Error;
    BedrockStreamExceptionEvent => "bedrock.stream.exception_event", Warning;
    BedrockStreamFirstNotMessageStart => "bedrock.stream.first_not_message_start", Error;
    BedrockStreamEmptyStartUnion => "bedrock.stream.empty_start_union", Error;
    BedrockStreamStartUnknownMember => "bedrock.stream.start_unknown_member", Warning;
    BedrockStreamToolDeltaWithoutStart => "bedrock.stream.tool_delta_without_start", Error;
    BedrockStreamDeltaAfterStop => "bedrock.stream.delta_after_stop", Error;
    BedrockStreamBlockNotStopped => "bedrock.stream.block_not_stopped", Error;
    BedrockStreamDeltaKindMismatch => "bedrock.stream.delta_kind_mismatch", Error;
    BedrockStreamToolInputNotJsonObject => "bedrock.stream.tool_input_not_json_object", Error;
    BedrockStreamToolInputEmpty => "bedrock.stream.tool_input_empty", Warning;
    BedrockStreamMessageStopMissing => "bedrock.stream.message_stop_missing", Error;
    BedrockStreamMetadataMissing => "bedrock.stream.metadata_missing", Warning;
    // MCP over Streamable HTTP (../shared/reference/mcp/mcp.md §4)
    McpJsonrpcNotJson => "mcp.jsonrpc.not_json", Error;
    McpJsonrpcVersion => "mcp.jsonrpc.version", Error;
    McpJsonrpcShape => "mcp.jsonrpc.shape", Error;
    McpJsonrpcBatchNotAllowed => "mcp.jsonrpc.batch_not_allowed", Error;
    McpJsonrpcBatchInitialize => "mcp.jsonrpc.batch_initialize", Error;
    McpJsonrpcRequestIdInvalid => "mcp.jsonrpc.request_id_invalid", Error;
    McpJsonrpcRequestIdReused => "mcp.jsonrpc.request_id_reused", Error;
    McpJsonrpcNotificationWithId => "mcp.jsonrpc.notification_with_id", Error;
    McpJsonrpcResponseIdMismatch => "mcp.jsonrpc.response_id_mismatch", Error;
    McpJsonrpcResponseIdUnknown => "mcp.jsonrpc.response_id_unknown", Error;
    McpJsonrpcResponseDuplicate => "mcp.jsonrpc.response_duplicate", Error;
    McpJsonrpcResultAndError => "mcp.jsonrpc.result_and_error", Error;
    McpJsonrpcResultNotObject => "mcp.jsonrpc.result_not_object", Error;
    McpJsonrpcErrorShape => "mcp.jsonrpc.error_shape", Error;
    McpJsonrpcErrorIdInvalid => "mcp.jsonrpc.error_id_invalid", Error;
    McpJsonrpcResponseMissing => "mcp.jsonrpc.response_missing", Error;
    McpJsonrpcResultTypeMissing => "mcp.jsonrpc.result_type_missing", Error;
    McpJsonrpcResultTypeUnknown => "mcp.jsonrpc.result_type_unknown", Warning;
    McpJsonrpcErrorCodeReserved => "mcp.jsonrpc.error_code_reserved", Warning;
    McpHttpAcceptHeader => "mcp.http.accept_header", Warning;
    McpHttpRequestContentType => "mcp.http.request_content_type", Warning;
    McpHttpNotificationStatus => "mcp.http.notification_status", Error;
    McpHttpResponseContentType => "mcp.http.response_content_type", Error;
    McpHttpJsonBodyNotOneResponse => "mcp.http.json_body_not_one_response", Error;
    McpHttpClientSentResponse => "mcp.http.client_sent_response", Error;
    McpHttpGetStatus => "mcp.http.get_status", Error;
    McpHttpProtocolVersionHeaderMissing => "mcp.http.protocol_version_header_missing", Error;
    McpHttpProtocolVersionHeaderMismatch => "mcp.http.protocol_version_header_mismatch", Error;
    McpHttpProtocolVersionUnsupportedAccepted => "mcp.http.protocol_version_unsupported_accepted", Warning;
    McpHttpRoutingHeaderMissing => "mcp.http.routing_header_missing", Error;
    McpHttpRoutingHeaderMismatch => "mcp.http.routing_header_mismatch", Error;
    McpHttpParamHeaderMismatch => "mcp.http.param_header_mismatch", Error;
    McpHttpErrorStatus => "mcp.http.error_status", Warning;
    McpHttpSseNoBufferingHeader => "mcp.http.sse_no_buffering_header", Warning;
    McpSseEventNotMessage => "mcp.sse.event_not_message", Warning;
    McpSseUnterminatedEvent => "mcp.sse.unterminated_event", Warning;
    McpSseResponseOnGetStream => "mcp.sse.response_on_get_stream", Error;
    McpSseServerRequestV4 => "mcp.sse.server_request_v4", Error;
    McpSseAfterResponse => "mcp.sse.after_response", Warning;
    McpSseEventIdReused => "mcp.sse.event_id_reused", Error;
    McpSseResumeWrongStream => "mcp.sse.resume_wrong_stream", Error;
    McpSsePrimingMissing => "mcp.sse.priming_missing", Warning;
    McpSseLastEventIdV4 => "mcp.sse.last_event_id_v4", Warning;
    McpSessionIdCharset => "mcp.session.id_charset", Error;
    McpSessionIdMissingOnRequest => "mcp.session.id_missing_on_request", Error;
    McpSessionIdOnInitialize => "mcp.session.id_on_initialize", Warning;
    McpSessionIdChanged => "mcp.session.id_changed", Warning;
    McpSessionStaleNot404 => "mcp.session.stale_not_404", Error;
    McpSessionNoReinitAfter404 => "mcp.session.no_reinit_after_404", Error;
    McpSessionMintedV4 => "mcp.session.minted_v4", Warning;
    McpLifecycleInitializedMissing => "mcp.lifecycle.initialized_missing", Error;
    McpLifecycleRequestBeforeInitialized => "mcp.lifecycle.request_before_initialized", Warning;
    McpLifecycleVersionUnknown => "mcp.lifecycle.version_unknown", Warning;
    McpLifecycleToolsCapabilityMissing => "mcp.lifecycle.tools_capability_missing", Error;
    McpLifecycleListChangedUndeclared => "mcp.lifecycle.list_changed_undeclared", Warning;
    McpLifecycleMetaMissing => "mcp.lifecycle.meta_missing", Error;
    McpLifecycleMetaVersionMismatch => "mcp.lifecycle.meta_version_mismatch", Error;
    McpToolsListResultShape => "mcp.tools_list.result_shape", Error;
    McpToolsListNameMissing => "mcp.tools_list.name_missing", Error;
    McpToolsListNameFormat => "mcp.tools_list.name_format", Warning;
    McpToolsListNameDuplicate => "mcp.tools_list.name_duplicate", Warning;
    McpToolsListInputSchemaMissing => "mcp.tools_list.input_schema_missing", Error;
    McpToolsListInputSchemaNotObject => "mcp.tools_list.input_schema_not_object", Error;
    McpToolsListInputSchemaInvalid => "mcp.tools_list.input_schema_invalid", Error;
    McpToolsListSchemaDialectUnsupported => "mcp.tools_list.schema_dialect_unsupported", Warning;
    McpToolsListSchemaRefUnresolvable => "mcp.tools_list.schema_ref_unresolvable", Warning;
    McpToolsListSchemaRefNetwork => "mcp.tools_list.schema_ref_network", Warning;
    McpToolsListOutputSchemaNotObject => "mcp.tools_list.output_schema_not_object", Error;
    McpToolsListAnnotationsShape => "mcp.tools_list.annotations_shape", Error;
    McpToolsListNextCursorType => "mcp.tools_list.next_cursor_type", Error;
    McpToolsListCursorLoop => "mcp.tools_list.cursor_loop", Warning;
    McpToolsListCacheFieldsMissing => "mcp.tools_list.cache_fields_missing", Error;
    McpToolsListXMcpHeaderInvalid => "mcp.tools_list.x_mcp_header_invalid", Error;
    McpToolsListTaskSupportInvalid => "mcp.tools_list.task_support_invalid", Error;
    McpToolsCallParamsInvalid => "mcp.tools_call.params_invalid", Error;
    McpToolsCallArgumentsNotObject => "mcp.tools_call.arguments_not_object", Error;
    McpToolsCallNameUnlisted => "mcp.tools_call.name_unlisted", Error;
    McpToolsCallArgumentsSchema => "mcp.tools_call.arguments_schema", Error;
    McpToolsCallArgumentJsonString => "mcp.tools_call.argument_json_string", Warning;
    McpToolsCallTaskNotAllowed => "mcp.tools_call.task_not_allowed", Error;
    McpToolsCallRetrySameId => "mcp.tools_call.retry_same_id", Error;
    McpToolsCallInputResponsesMismatch => "mcp.tools_call.input_responses_mismatch", Warning;
    McpToolsCallResultContentMissing => "mcp.tools_call.result_content_missing", Error;
    McpContentTypeUnknown => "mcp.content.type_unknown", Error;
    McpContentFields => "mcp.content.fields", Error;
    McpContentBase64Invalid => "mcp.content.base64_invalid", Warning;
    McpToolsCallIsErrorType => "mcp.tools_call.is_error_type", Error;
    McpToolsCallResultDoubleWrapped => "mcp.tools_call.result_double_wrapped", Error;
    McpToolsCallStructuredContentMissing => "mcp.tools_call.structured_content_missing", Error;
    McpToolsCallStructuredContentSchema => "mcp.tools_call.structured_content_schema", Error;
    McpToolsCallStructuredContentNotObject => "mcp.tools_call.structured_content_not_object", Error;
    McpToolsCallStructuredContentNoTextMirror => "mcp.tools_call.structured_content_no_text_mirror", Warning;
    McpToolsCallUnknownToolAsResult => "mcp.tools_call.unknown_tool_as_result", Warning;
    McpToolsCallUnknownToolErrorCode => "mcp.tools_call.unknown_tool_error_code", Warning;
    McpToolsCallInputValidationAsProtocolError => "mcp.tools_call.input_validation_as_protocol_error", Warning;
    McpToolsCallExecutionErrorAsProtocolError => "mcp.tools_call.execution_error_as_protocol_error", Warning;
    McpToolsCallIsErrorSuspect => "mcp.tools_call.is_error_suspect", Warning;
    McpToolsCallCreateTaskShape => "mcp.tools_call.create_task_shape", Error;
    McpToolsCallInputRequiredShape => "mcp.tools_call.input_required_shape", Error;
    McpProgressTokenInvalid => "mcp.progress.token_invalid", Error;
    McpProgressTokenUnknown => "mcp.progress.token_unknown", Error;
    McpProgressNotIncreasing => "mcp.progress.not_increasing", Error;
    McpProgressAfterCompletion => "mcp.progress.after_completion", Error;
    McpProgressWrongStream => "mcp.progress.wrong_stream", Error;
    McpCancelInitialize => "mcp.cancel.initialize", Error;
    McpCancelUnknownRequest => "mcp.cancel.unknown_request", Warning;
    McpCancelResponseAfterCancel => "mcp.cancel.response_after_cancel", Warning;
}

impl RuleId {
    /// Where the rule is documented, relative to the repository root.
    pub fn docs_anchor(self) -> String {
        format!("docs/rules.md#{}", self.as_str().replace('.', ""))
    }
}

/// A string that names no rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown rule id {0:?}")]
pub struct UnknownRule(pub String);

impl FromStr for RuleId {
    type Err = UnknownRule;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        RuleId::ALL
            .iter()
            .copied()
            .find(|rule| rule.as_str() == text)
            .ok_or_else(|| UnknownRule(text.to_owned()))
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RuleId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RuleId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for rule in RuleId::ALL {
            assert!(seen.insert(rule.as_str()), "duplicate id {rule}");
            assert_eq!(rule.as_str().parse::<RuleId>(), Ok(rule));
            let (family, name) = rule.as_str().split_once('.').expect("family.name");
            assert!(!family.is_empty() && !name.is_empty());
        }
        assert!("tool_call.nonsense".parse::<RuleId>().is_err());
    }
}
