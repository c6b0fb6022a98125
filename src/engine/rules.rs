//! The catalogue of contract rules: one [`RuleId`] per thing tooltap can object to.
//!
//! Ids are public API (logs, metrics, recordings, `docs/rules.md`): never rename or reuse one.
//! Every per-rule fact comes from an exhaustive `match` with no catch-all arm, so adding a
//! variant forces a decision on its string id and default severity. The checks in
//! [`crate::engine::contract`] produce these ids; [`crate::engine::violation`] carries them out.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::severity::Severity;

/// A stable identifier of one contract rule, serialized as its `family.name` string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RuleId {
    RequestSchemaInvalid,
    ResponseNotJson,
    ResponseShapeInvalid,
    ResponseStreamMismatch,
    FinishReasonNotToolCalls,
    FinishReasonInvalid,
    FinishReasonRepeated,
    FinishReasonStopOnNamedChoice,
    MessageContentType,
    ToolCallsEmpty,
    ToolCallsParallelDisallowed,
    ToolCallIdMissing,
    ToolCallIdDuplicate,
    ToolCallTypeInvalid,
    ToolCallNameMissing,
    ToolCallNameUndeclared,
    ToolCallArgumentsNotString,
    ToolCallArgumentsNotJson,
    ToolCallArgumentsNotObject,
    ToolCallArgumentsSchema,
    ToolChoiceIgnored,
    ToolChoiceWrongFunction,
    ToolChoiceNoneViolated,
    SseDataNotJson,
    SseDoneMissing,
    SseDataAfterDone,
    SseErrorEvent,
    StreamTruncated,
    DeltaIndexMissing,
    DeltaIndexInvalid,
    DeltaIdRepeated,
    DeltaIdChanged,
    DeltaNameRepeated,
    DeltaNameChanged,
    DeltaNameLate,
    DeltaArgumentsNotString,
    // Chat legacy functions, custom tools, allowed_tools (dialects.md §2)
    ChatLegacyRequestFunctionsCountInvalid,
    ChatLegacyRequestFunctionNameInvalid,
    ChatLegacyRequestFunctionNameDuplicate,
    ChatLegacyRequestFunctionCallUnknownName,
    ChatLegacyRequestFunctionCallWithoutFunctions,
    ChatLegacyRequestMixedFunctionsAndTools,
    ChatLegacyRequestFunctionMessageInvalid,
    ChatLegacyResponseSwitchedToToolCalls,
    ChatLegacyResponseSwitchedToFunctionCall,
    ChatLegacyResponseFunctionCallFieldsMissing,
    ChatLegacyResponseArgumentsNotString,
    ChatLegacyResponseArgumentsInvalidJson,
    ChatLegacyResponseArgumentsSchemaMismatch,
    ChatLegacyResponseNameUnknown,
    ChatLegacyResponseFinishReasonMismatch,
    ChatLegacyResponseMultipleCalls,
    ChatLegacyFunctionCallNoneViolated,
    ChatLegacyFunctionCallForcedViolated,
    ChatLegacyStreamArgumentsBeforeName,
    ChatLegacyStreamNameRepeated,
    ChatLegacyStreamMixedWithToolCalls,
    ChatLegacyStreamFinishReasonMissing,
    ChatCustomRequestToolShapeInvalid,
    ChatCustomRequestGrammarShapeInvalid,
    ChatCustomRequestToolChoiceUnknown,
    ChatCustomResponseCallShapeInvalid,
    ChatCustomResponseInputNotString,
    ChatCustomResponseCalledAsFunction,
    ChatCustomResponseInputJsonWrapped,
    ChatCustomResponseGrammarMismatch,
    ChatCustomStreamFragmentKindMismatch,
    ChatCustomStreamIndexMissing,
    ChatAllowedRequestShapeInvalid,
    ChatAllowedRequestUnknownTool,
    ChatAllowedResponseToolNotAllowed,
    ChatAllowedResponseRequiredViolated,
    ResponsesRequestToolShapeChatStyle,
    ResponsesRequestToolNameInvalid,
    ResponsesRequestToolNameDuplicate,
    ResponsesRequestParametersNotObjectSchema,
    ResponsesRequestStrictSchemaIncompatible,
    ResponsesRequestCustomFormatInvalid,
    ResponsesRequestToolChoiceUnknownTool,
    ResponsesRequestAllowedToolsUnknownTool,
    ResponsesRequestToolChoiceWithoutTools,
    ResponsesRequestFunctionCallOutputOrphan,
    ResponsesRequestCallIdTooLong,
    ResponsesOutputEnvelopeInvalid,
    ResponsesOutputCallIdMissing,
    ResponsesOutputCallIdDuplicate,
    ResponsesOutputItemIdMissing,
    ResponsesOutputNameUnknown,
    ResponsesOutputArgumentsNotString,
    ResponsesOutputArgumentsInvalidJson,
    ResponsesOutputArgumentsSchemaMismatch,
    ResponsesOutputCustomInputNotString,
    ResponsesOutputCustomCalledAsFunction,
    ResponsesOutputCustomInputJsonWrapped,
    ResponsesOutputCustomGrammarMismatch,
    ResponsesOutputToolMarkupInText,
    ResponsesOutputStatusInconsistent,
    ResponsesToolChoiceNoneViolated,
    ResponsesToolChoiceRequiredViolated,
    ResponsesToolChoiceForcedViolated,
    ResponsesToolChoiceAllowedToolsViolated,
    ResponsesToolChoiceParallelViolated,
    ResponsesStreamEventNameMismatch,
    ResponsesStreamUnknownEventType,
    ResponsesStreamSequenceNumberMissing,
    ResponsesStreamSequenceNumberNotMonotonic,
    ResponsesStreamDeltaWithoutItem,
    ResponsesStreamItemIdOutputIndexMismatch,
    ResponsesStreamOutputIndexCollision,
    ResponsesStreamDeltaKindMismatch,
    ResponsesStreamEventAfterItemDone,
    ResponsesStreamArgumentsDoneMismatch,
    ResponsesStreamItemDoneMismatch,
    ResponsesStreamItemNotDone,
    ResponsesStreamToolMarkupAsTextDelta,
    ResponsesStreamTerminalMissing,
    ResponsesStreamEventAfterTerminal,
    ResponsesStreamTerminalOutputMismatch,
    ResponsesStreamTerminalEnvelopeInvalid,
    ResponsesStreamDoneSentinel,
    ResponsesStreamErrorEventInvalid,
}

impl RuleId {
    /// Every rule, in documentation order.
    pub const ALL: [RuleId; 121] = [
        RuleId::RequestSchemaInvalid,
        RuleId::ResponseNotJson,
        RuleId::ResponseShapeInvalid,
        RuleId::ResponseStreamMismatch,
        RuleId::FinishReasonNotToolCalls,
        RuleId::FinishReasonInvalid,
        RuleId::FinishReasonRepeated,
        RuleId::FinishReasonStopOnNamedChoice,
        RuleId::MessageContentType,
        RuleId::ToolCallsEmpty,
        RuleId::ToolCallsParallelDisallowed,
        RuleId::ToolCallIdMissing,
        RuleId::ToolCallIdDuplicate,
        RuleId::ToolCallTypeInvalid,
        RuleId::ToolCallNameMissing,
        RuleId::ToolCallNameUndeclared,
        RuleId::ToolCallArgumentsNotString,
        RuleId::ToolCallArgumentsNotJson,
        RuleId::ToolCallArgumentsNotObject,
        RuleId::ToolCallArgumentsSchema,
        RuleId::ToolChoiceIgnored,
        RuleId::ToolChoiceWrongFunction,
        RuleId::ToolChoiceNoneViolated,
        RuleId::SseDataNotJson,
        RuleId::SseDoneMissing,
        RuleId::SseDataAfterDone,
        RuleId::SseErrorEvent,
        RuleId::StreamTruncated,
        RuleId::DeltaIndexMissing,
        RuleId::DeltaIndexInvalid,
        RuleId::DeltaIdRepeated,
        RuleId::DeltaIdChanged,
        RuleId::DeltaNameRepeated,
        RuleId::DeltaNameChanged,
        RuleId::DeltaNameLate,
        RuleId::DeltaArgumentsNotString,
        // Chat legacy functions, custom tools, allowed_tools (dialects.md §2)
        RuleId::ChatLegacyRequestFunctionsCountInvalid,
        RuleId::ChatLegacyRequestFunctionNameInvalid,
        RuleId::ChatLegacyRequestFunctionNameDuplicate,
        RuleId::ChatLegacyRequestFunctionCallUnknownName,
        RuleId::ChatLegacyRequestFunctionCallWithoutFunctions,
        RuleId::ChatLegacyRequestMixedFunctionsAndTools,
        RuleId::ChatLegacyRequestFunctionMessageInvalid,
        RuleId::ChatLegacyResponseSwitchedToToolCalls,
        RuleId::ChatLegacyResponseSwitchedToFunctionCall,
        RuleId::ChatLegacyResponseFunctionCallFieldsMissing,
        RuleId::ChatLegacyResponseArgumentsNotString,
        RuleId::ChatLegacyResponseArgumentsInvalidJson,
        RuleId::ChatLegacyResponseArgumentsSchemaMismatch,
        RuleId::ChatLegacyResponseNameUnknown,
        RuleId::ChatLegacyResponseFinishReasonMismatch,
        RuleId::ChatLegacyResponseMultipleCalls,
        RuleId::ChatLegacyFunctionCallNoneViolated,
        RuleId::ChatLegacyFunctionCallForcedViolated,
        RuleId::ChatLegacyStreamArgumentsBeforeName,
        RuleId::ChatLegacyStreamNameRepeated,
        RuleId::ChatLegacyStreamMixedWithToolCalls,
        RuleId::ChatLegacyStreamFinishReasonMissing,
        RuleId::ChatCustomRequestToolShapeInvalid,
        RuleId::ChatCustomRequestGrammarShapeInvalid,
        RuleId::ChatCustomRequestToolChoiceUnknown,
        RuleId::ChatCustomResponseCallShapeInvalid,
        RuleId::ChatCustomResponseInputNotString,
        RuleId::ChatCustomResponseCalledAsFunction,
        RuleId::ChatCustomResponseInputJsonWrapped,
        RuleId::ChatCustomResponseGrammarMismatch,
        RuleId::ChatCustomStreamFragmentKindMismatch,
        RuleId::ChatCustomStreamIndexMissing,
        RuleId::ChatAllowedRequestShapeInvalid,
        RuleId::ChatAllowedRequestUnknownTool,
        RuleId::ChatAllowedResponseToolNotAllowed,
        RuleId::ChatAllowedResponseRequiredViolated,
        RuleId::ResponsesRequestToolShapeChatStyle,
        RuleId::ResponsesRequestToolNameInvalid,
        RuleId::ResponsesRequestToolNameDuplicate,
        RuleId::ResponsesRequestParametersNotObjectSchema,
        RuleId::ResponsesRequestStrictSchemaIncompatible,
        RuleId::ResponsesRequestCustomFormatInvalid,
        RuleId::ResponsesRequestToolChoiceUnknownTool,
        RuleId::ResponsesRequestAllowedToolsUnknownTool,
        RuleId::ResponsesRequestToolChoiceWithoutTools,
        RuleId::ResponsesRequestFunctionCallOutputOrphan,
        RuleId::ResponsesRequestCallIdTooLong,
        RuleId::ResponsesOutputEnvelopeInvalid,
        RuleId::ResponsesOutputCallIdMissing,
        RuleId::ResponsesOutputCallIdDuplicate,
        RuleId::ResponsesOutputItemIdMissing,
        RuleId::ResponsesOutputNameUnknown,
        RuleId::ResponsesOutputArgumentsNotString,
        RuleId::ResponsesOutputArgumentsInvalidJson,
        RuleId::ResponsesOutputArgumentsSchemaMismatch,
        RuleId::ResponsesOutputCustomInputNotString,
        RuleId::ResponsesOutputCustomCalledAsFunction,
        RuleId::ResponsesOutputCustomInputJsonWrapped,
        RuleId::ResponsesOutputCustomGrammarMismatch,
        RuleId::ResponsesOutputToolMarkupInText,
        RuleId::ResponsesOutputStatusInconsistent,
        RuleId::ResponsesToolChoiceNoneViolated,
        RuleId::ResponsesToolChoiceRequiredViolated,
        RuleId::ResponsesToolChoiceForcedViolated,
        RuleId::ResponsesToolChoiceAllowedToolsViolated,
        RuleId::ResponsesToolChoiceParallelViolated,
        RuleId::ResponsesStreamEventNameMismatch,
        RuleId::ResponsesStreamUnknownEventType,
        RuleId::ResponsesStreamSequenceNumberMissing,
        RuleId::ResponsesStreamSequenceNumberNotMonotonic,
        RuleId::ResponsesStreamDeltaWithoutItem,
        RuleId::ResponsesStreamItemIdOutputIndexMismatch,
        RuleId::ResponsesStreamOutputIndexCollision,
        RuleId::ResponsesStreamDeltaKindMismatch,
        RuleId::ResponsesStreamEventAfterItemDone,
        RuleId::ResponsesStreamArgumentsDoneMismatch,
        RuleId::ResponsesStreamItemDoneMismatch,
        RuleId::ResponsesStreamItemNotDone,
        RuleId::ResponsesStreamToolMarkupAsTextDelta,
        RuleId::ResponsesStreamTerminalMissing,
        RuleId::ResponsesStreamEventAfterTerminal,
        RuleId::ResponsesStreamTerminalOutputMismatch,
        RuleId::ResponsesStreamTerminalEnvelopeInvalid,
        RuleId::ResponsesStreamDoneSentinel,
        RuleId::ResponsesStreamErrorEventInvalid,
    ];

    /// The stable `family.name` id.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleId::RequestSchemaInvalid => "request.schema_invalid",
            RuleId::ResponseNotJson => "response.not_json",
            RuleId::ResponseShapeInvalid => "response.shape_invalid",
            RuleId::ResponseStreamMismatch => "response.stream_mismatch",
            RuleId::FinishReasonNotToolCalls => "finish_reason.not_tool_calls",
            RuleId::FinishReasonInvalid => "finish_reason.invalid",
            RuleId::FinishReasonRepeated => "finish_reason.repeated",
            RuleId::FinishReasonStopOnNamedChoice => "finish_reason.stop_on_named_choice",
            RuleId::MessageContentType => "message.content_type",
            RuleId::ToolCallsEmpty => "tool_calls.empty",
            RuleId::ToolCallsParallelDisallowed => "tool_calls.parallel_disallowed",
            RuleId::ToolCallIdMissing => "tool_call.id_missing",
            RuleId::ToolCallIdDuplicate => "tool_call.id_duplicate",
            RuleId::ToolCallTypeInvalid => "tool_call.type_invalid",
            RuleId::ToolCallNameMissing => "tool_call.name_missing",
            RuleId::ToolCallNameUndeclared => "tool_call.name_undeclared",
            RuleId::ToolCallArgumentsNotString => "tool_call.arguments_not_string",
            RuleId::ToolCallArgumentsNotJson => "tool_call.arguments_not_json",
            RuleId::ToolCallArgumentsNotObject => "tool_call.arguments_not_object",
            RuleId::ToolCallArgumentsSchema => "tool_call.arguments_schema",
            RuleId::ToolChoiceIgnored => "tool_choice.ignored",
            RuleId::ToolChoiceWrongFunction => "tool_choice.wrong_function",
            RuleId::ToolChoiceNoneViolated => "tool_choice.none_violated",
            RuleId::SseDataNotJson => "sse.data_not_json",
            RuleId::SseDoneMissing => "sse.done_missing",
            RuleId::SseDataAfterDone => "sse.data_after_done",
            RuleId::SseErrorEvent => "sse.error_event",
            RuleId::StreamTruncated => "stream.truncated",
            RuleId::DeltaIndexMissing => "delta.index_missing",
            RuleId::DeltaIndexInvalid => "delta.index_invalid",
            RuleId::DeltaIdRepeated => "delta.id_repeated",
            RuleId::DeltaIdChanged => "delta.id_changed",
            RuleId::DeltaNameRepeated => "delta.name_repeated",
            RuleId::DeltaNameChanged => "delta.name_changed",
            RuleId::DeltaNameLate => "delta.name_late",
            RuleId::DeltaArgumentsNotString => "delta.arguments_not_string",
            // Chat legacy functions, custom tools, allowed_tools (dialects.md §2)
            RuleId::ChatLegacyRequestFunctionsCountInvalid => {
                "chat_legacy.request.functions_count_invalid"
            }
            RuleId::ChatLegacyRequestFunctionNameInvalid => {
                "chat_legacy.request.function_name_invalid"
            }
            RuleId::ChatLegacyRequestFunctionNameDuplicate => {
                "chat_legacy.request.function_name_duplicate"
            }
            RuleId::ChatLegacyRequestFunctionCallUnknownName => {
                "chat_legacy.request.function_call_unknown_name"
            }
            RuleId::ChatLegacyRequestFunctionCallWithoutFunctions => {
                "chat_legacy.request.function_call_without_functions"
            }
            RuleId::ChatLegacyRequestMixedFunctionsAndTools => {
                "chat_legacy.request.mixed_functions_and_tools"
            }
            RuleId::ChatLegacyRequestFunctionMessageInvalid => {
                "chat_legacy.request.function_message_invalid"
            }
            RuleId::ChatLegacyResponseSwitchedToToolCalls => {
                "chat_legacy.response.switched_to_tool_calls"
            }
            RuleId::ChatLegacyResponseSwitchedToFunctionCall => {
                "chat_legacy.response.switched_to_function_call"
            }
            RuleId::ChatLegacyResponseFunctionCallFieldsMissing => {
                "chat_legacy.response.function_call_fields_missing"
            }
            RuleId::ChatLegacyResponseArgumentsNotString => {
                "chat_legacy.response.arguments_not_string"
            }
            RuleId::ChatLegacyResponseArgumentsInvalidJson => {
                "chat_legacy.response.arguments_invalid_json"
            }
            RuleId::ChatLegacyResponseArgumentsSchemaMismatch => {
                "chat_legacy.response.arguments_schema_mismatch"
            }
            RuleId::ChatLegacyResponseNameUnknown => "chat_legacy.response.name_unknown",
            RuleId::ChatLegacyResponseFinishReasonMismatch => {
                "chat_legacy.response.finish_reason_mismatch"
            }
            RuleId::ChatLegacyResponseMultipleCalls => "chat_legacy.response.multiple_calls",
            RuleId::ChatLegacyFunctionCallNoneViolated => "chat_legacy.function_call.none_violated",
            RuleId::ChatLegacyFunctionCallForcedViolated => {
                "chat_legacy.function_call.forced_violated"
            }
            RuleId::ChatLegacyStreamArgumentsBeforeName => {
                "chat_legacy.stream.arguments_before_name"
            }
            RuleId::ChatLegacyStreamNameRepeated => "chat_legacy.stream.name_repeated",
            RuleId::ChatLegacyStreamMixedWithToolCalls => {
                "chat_legacy.stream.mixed_with_tool_calls"
            }
            RuleId::ChatLegacyStreamFinishReasonMissing => {
                "chat_legacy.stream.finish_reason_missing"
            }
            RuleId::ChatCustomRequestToolShapeInvalid => "chat_custom.request.tool_shape_invalid",
            RuleId::ChatCustomRequestGrammarShapeInvalid => {
                "chat_custom.request.grammar_shape_invalid"
            }
            RuleId::ChatCustomRequestToolChoiceUnknown => "chat_custom.request.tool_choice_unknown",
            RuleId::ChatCustomResponseCallShapeInvalid => "chat_custom.response.call_shape_invalid",
            RuleId::ChatCustomResponseInputNotString => "chat_custom.response.input_not_string",
            RuleId::ChatCustomResponseCalledAsFunction => "chat_custom.response.called_as_function",
            RuleId::ChatCustomResponseInputJsonWrapped => "chat_custom.response.input_json_wrapped",
            RuleId::ChatCustomResponseGrammarMismatch => "chat_custom.response.grammar_mismatch",
            RuleId::ChatCustomStreamFragmentKindMismatch => {
                "chat_custom.stream.fragment_kind_mismatch"
            }
            RuleId::ChatCustomStreamIndexMissing => "chat_custom.stream.index_missing",
            RuleId::ChatAllowedRequestShapeInvalid => "chat_allowed.request.shape_invalid",
            RuleId::ChatAllowedRequestUnknownTool => "chat_allowed.request.unknown_tool",
            RuleId::ChatAllowedResponseToolNotAllowed => "chat_allowed.response.tool_not_allowed",
            RuleId::ChatAllowedResponseRequiredViolated => {
                "chat_allowed.response.required_violated"
            }
            RuleId::ResponsesRequestToolShapeChatStyle => "responses.request.tool_shape_chat_style",
            RuleId::ResponsesRequestToolNameInvalid => "responses.request.tool_name_invalid",
            RuleId::ResponsesRequestToolNameDuplicate => "responses.request.tool_name_duplicate",
            RuleId::ResponsesRequestParametersNotObjectSchema => {
                "responses.request.parameters_not_object_schema"
            }
            RuleId::ResponsesRequestStrictSchemaIncompatible => {
                "responses.request.strict_schema_incompatible"
            }
            RuleId::ResponsesRequestCustomFormatInvalid => {
                "responses.request.custom_format_invalid"
            }
            RuleId::ResponsesRequestToolChoiceUnknownTool => {
                "responses.request.tool_choice_unknown_tool"
            }
            RuleId::ResponsesRequestAllowedToolsUnknownTool => {
                "responses.request.allowed_tools_unknown_tool"
            }
            RuleId::ResponsesRequestFunctionCallOutputOrphan => {
                "responses.request.function_call_output_orphan"
            }
            RuleId::ResponsesRequestCallIdTooLong => "responses.request.call_id_too_long",
            RuleId::ResponsesRequestToolChoiceWithoutTools => {
                "responses.request.tool_choice_without_tools"
            }
            RuleId::ResponsesOutputEnvelopeInvalid => "responses.output.envelope_invalid",
            RuleId::ResponsesOutputCallIdMissing => "responses.output.call_id_missing",
            RuleId::ResponsesOutputCallIdDuplicate => "responses.output.call_id_duplicate",
            RuleId::ResponsesOutputItemIdMissing => "responses.output.item_id_missing",
            RuleId::ResponsesOutputNameUnknown => "responses.output.name_unknown",
            RuleId::ResponsesOutputArgumentsNotString => "responses.output.arguments_not_string",
            RuleId::ResponsesOutputArgumentsInvalidJson => {
                "responses.output.arguments_invalid_json"
            }
            RuleId::ResponsesOutputArgumentsSchemaMismatch => {
                "responses.output.arguments_schema_mismatch"
            }
            RuleId::ResponsesOutputCustomInputNotString => {
                "responses.output.custom_input_not_string"
            }
            RuleId::ResponsesOutputCustomCalledAsFunction => {
                "responses.output.custom_called_as_function"
            }
            RuleId::ResponsesOutputCustomInputJsonWrapped => {
                "responses.output.custom_input_json_wrapped"
            }
            RuleId::ResponsesOutputCustomGrammarMismatch => {
                "responses.output.custom_grammar_mismatch"
            }
            RuleId::ResponsesOutputToolMarkupInText => "responses.output.tool_markup_in_text",
            RuleId::ResponsesOutputStatusInconsistent => "responses.output.status_inconsistent",
            RuleId::ResponsesToolChoiceNoneViolated => "responses.tool_choice.none_violated",
            RuleId::ResponsesToolChoiceRequiredViolated => {
                "responses.tool_choice.required_violated"
            }
            RuleId::ResponsesToolChoiceForcedViolated => "responses.tool_choice.forced_violated",
            RuleId::ResponsesToolChoiceAllowedToolsViolated => {
                "responses.tool_choice.allowed_tools_violated"
            }
            RuleId::ResponsesToolChoiceParallelViolated => {
                "responses.tool_choice.parallel_violated"
            }
            RuleId::ResponsesStreamEventNameMismatch => "responses.stream.event_name_mismatch",
            RuleId::ResponsesStreamUnknownEventType => "responses.stream.unknown_event_type",
            RuleId::ResponsesStreamSequenceNumberMissing => {
                "responses.stream.sequence_number_missing"
            }
            RuleId::ResponsesStreamSequenceNumberNotMonotonic => {
                "responses.stream.sequence_number_not_monotonic"
            }
            RuleId::ResponsesStreamDeltaWithoutItem => "responses.stream.delta_without_item",
            RuleId::ResponsesStreamItemIdOutputIndexMismatch => {
                "responses.stream.item_id_output_index_mismatch"
            }
            RuleId::ResponsesStreamOutputIndexCollision => {
                "responses.stream.output_index_collision"
            }
            RuleId::ResponsesStreamDeltaKindMismatch => "responses.stream.delta_kind_mismatch",
            RuleId::ResponsesStreamEventAfterItemDone => "responses.stream.event_after_item_done",
            RuleId::ResponsesStreamArgumentsDoneMismatch => {
                "responses.stream.arguments_done_mismatch"
            }
            RuleId::ResponsesStreamItemDoneMismatch => "responses.stream.item_done_mismatch",
            RuleId::ResponsesStreamItemNotDone => "responses.stream.item_not_done",
            RuleId::ResponsesStreamToolMarkupAsTextDelta => {
                "responses.stream.tool_markup_as_text_delta"
            }
            RuleId::ResponsesStreamTerminalMissing => "responses.stream.terminal_missing",
            RuleId::ResponsesStreamEventAfterTerminal => "responses.stream.event_after_terminal",
            RuleId::ResponsesStreamTerminalOutputMismatch => {
                "responses.stream.terminal_output_mismatch"
            }
            RuleId::ResponsesStreamTerminalEnvelopeInvalid => {
                "responses.stream.terminal_envelope_invalid"
            }
            RuleId::ResponsesStreamDoneSentinel => "responses.stream.done_sentinel",
            RuleId::ResponsesStreamErrorEventInvalid => "responses.stream.error_event_invalid",
        }
    }

    /// The severity a rule has unless [`crate::engine::SeverityOverrides`] says otherwise.
    /// Warnings are the things clients commonly survive (a repeated id, a skipped index) or
    /// that say more about the request than the response (an invalid declared schema).
    pub fn default_severity(self) -> Severity {
        match self {
            RuleId::RequestSchemaInvalid
            | RuleId::ResponseStreamMismatch
            | RuleId::ToolCallsParallelDisallowed
            | RuleId::DeltaIndexInvalid
            | RuleId::DeltaIdRepeated
            | RuleId::DeltaNameRepeated
            | RuleId::FinishReasonStopOnNamedChoice
            // Chat legacy functions, custom tools, allowed_tools (dialects.md §2)
            | RuleId::ChatLegacyRequestFunctionCallWithoutFunctions
            | RuleId::ChatLegacyRequestMixedFunctionsAndTools
            | RuleId::ChatLegacyResponseArgumentsSchemaMismatch
            | RuleId::ChatLegacyStreamNameRepeated
            | RuleId::ChatCustomResponseInputJsonWrapped
            | RuleId::ChatCustomResponseGrammarMismatch
            | RuleId::ChatCustomStreamFragmentKindMismatch
            | RuleId::ResponsesRequestParametersNotObjectSchema
            | RuleId::ResponsesRequestStrictSchemaIncompatible
            | RuleId::ResponsesRequestToolChoiceWithoutTools
            | RuleId::ResponsesRequestFunctionCallOutputOrphan
            | RuleId::ResponsesOutputItemIdMissing
            | RuleId::ResponsesOutputCustomInputJsonWrapped
            | RuleId::ResponsesOutputCustomGrammarMismatch
            | RuleId::ResponsesOutputToolMarkupInText
            | RuleId::ResponsesStreamUnknownEventType
            | RuleId::ResponsesStreamSequenceNumberMissing
            | RuleId::ResponsesStreamToolMarkupAsTextDelta
            | RuleId::ResponsesStreamDoneSentinel => Severity::Warning,
            RuleId::ResponseNotJson
            | RuleId::ResponseShapeInvalid
            | RuleId::FinishReasonNotToolCalls
            | RuleId::FinishReasonInvalid
            | RuleId::FinishReasonRepeated
            | RuleId::MessageContentType
            | RuleId::ToolCallsEmpty
            | RuleId::ToolCallIdMissing
            | RuleId::ToolCallIdDuplicate
            | RuleId::ToolCallTypeInvalid
            | RuleId::ToolCallNameMissing
            | RuleId::ToolCallNameUndeclared
            | RuleId::ToolCallArgumentsNotString
            | RuleId::ToolCallArgumentsNotJson
            | RuleId::ToolCallArgumentsNotObject
            | RuleId::ToolCallArgumentsSchema
            | RuleId::ToolChoiceIgnored
            | RuleId::ToolChoiceWrongFunction
            | RuleId::ToolChoiceNoneViolated
            | RuleId::SseDataNotJson
            | RuleId::SseDoneMissing
            | RuleId::SseDataAfterDone
            | RuleId::SseErrorEvent
            | RuleId::StreamTruncated
            | RuleId::DeltaIndexMissing
            | RuleId::DeltaIdChanged
            | RuleId::DeltaNameChanged
            | RuleId::DeltaNameLate
            | RuleId::DeltaArgumentsNotString
            // Chat legacy functions, custom tools, allowed_tools (dialects.md §2)
            | RuleId::ChatLegacyRequestFunctionsCountInvalid
            | RuleId::ChatLegacyRequestFunctionNameInvalid
            | RuleId::ChatLegacyRequestFunctionNameDuplicate
            | RuleId::ChatLegacyRequestFunctionCallUnknownName
            | RuleId::ChatLegacyRequestFunctionMessageInvalid
            | RuleId::ChatLegacyResponseSwitchedToToolCalls
            | RuleId::ChatLegacyResponseSwitchedToFunctionCall
            | RuleId::ChatLegacyResponseFunctionCallFieldsMissing
            | RuleId::ChatLegacyResponseArgumentsNotString
            | RuleId::ChatLegacyResponseArgumentsInvalidJson
            | RuleId::ChatLegacyResponseNameUnknown
            | RuleId::ChatLegacyResponseFinishReasonMismatch
            | RuleId::ChatLegacyResponseMultipleCalls
            | RuleId::ChatLegacyFunctionCallNoneViolated
            | RuleId::ChatLegacyFunctionCallForcedViolated
            | RuleId::ChatLegacyStreamArgumentsBeforeName
            | RuleId::ChatLegacyStreamMixedWithToolCalls
            | RuleId::ChatLegacyStreamFinishReasonMissing
            | RuleId::ChatCustomRequestToolShapeInvalid
            | RuleId::ChatCustomRequestGrammarShapeInvalid
            | RuleId::ChatCustomRequestToolChoiceUnknown
            | RuleId::ChatCustomResponseCallShapeInvalid
            | RuleId::ChatCustomResponseInputNotString
            | RuleId::ChatCustomResponseCalledAsFunction
            | RuleId::ChatCustomStreamIndexMissing
            | RuleId::ChatAllowedRequestShapeInvalid
            | RuleId::ChatAllowedRequestUnknownTool
            | RuleId::ChatAllowedResponseToolNotAllowed
            | RuleId::ChatAllowedResponseRequiredViolated
            | RuleId::ResponsesRequestToolShapeChatStyle
            | RuleId::ResponsesRequestCallIdTooLong
            | RuleId::ResponsesRequestToolNameInvalid
            | RuleId::ResponsesRequestToolNameDuplicate
            | RuleId::ResponsesRequestCustomFormatInvalid
            | RuleId::ResponsesRequestToolChoiceUnknownTool
            | RuleId::ResponsesRequestAllowedToolsUnknownTool
            | RuleId::ResponsesOutputEnvelopeInvalid
            | RuleId::ResponsesOutputCallIdMissing
            | RuleId::ResponsesOutputCallIdDuplicate
            | RuleId::ResponsesOutputNameUnknown
            | RuleId::ResponsesOutputArgumentsNotString
            | RuleId::ResponsesOutputArgumentsInvalidJson
            | RuleId::ResponsesOutputArgumentsSchemaMismatch
            | RuleId::ResponsesOutputCustomInputNotString
            | RuleId::ResponsesOutputCustomCalledAsFunction
            | RuleId::ResponsesOutputStatusInconsistent
            | RuleId::ResponsesToolChoiceNoneViolated
            | RuleId::ResponsesToolChoiceRequiredViolated
            | RuleId::ResponsesToolChoiceForcedViolated
            | RuleId::ResponsesToolChoiceAllowedToolsViolated
            | RuleId::ResponsesToolChoiceParallelViolated
            | RuleId::ResponsesStreamEventNameMismatch
            | RuleId::ResponsesStreamSequenceNumberNotMonotonic
            | RuleId::ResponsesStreamDeltaWithoutItem
            | RuleId::ResponsesStreamItemIdOutputIndexMismatch
            | RuleId::ResponsesStreamOutputIndexCollision
            | RuleId::ResponsesStreamDeltaKindMismatch
            | RuleId::ResponsesStreamEventAfterItemDone
            | RuleId::ResponsesStreamArgumentsDoneMismatch
            | RuleId::ResponsesStreamItemDoneMismatch
            | RuleId::ResponsesStreamItemNotDone
            | RuleId::ResponsesStreamTerminalMissing
            | RuleId::ResponsesStreamEventAfterTerminal
            | RuleId::ResponsesStreamTerminalOutputMismatch
            | RuleId::ResponsesStreamTerminalEnvelopeInvalid
            | RuleId::ResponsesStreamErrorEventInvalid => Severity::Error,
        }
    }

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
