//! §4.6 rules across pages: `mcp.tools_list.name_duplicate` and `cursor_loop` (warnings), and
//! each `tools/list` page handed to the conversation's catalog.

use serde_json::Value;

use super::conversation::Conversation;
use super::seen::{RpcId, method_of};
use super::{Out, Seen, StoreLimits, result_of};
use crate::engine::{RuleId, SchemaCache};

pub(super) fn judge(
    conversation: &mut Conversation,
    seen: &Seen<'_>,
    limits: &StoreLimits,
    schemas: &SchemaCache,
    out: &mut Out,
) {
    for request in seen.requests() {
        if method_of(request.value) != Some("tools/list") {
            continue;
        }
        let Some(msg) = RpcId::of(request.value).and_then(|id| seen.answer(&id)) else {
            continue;
        };
        let Some(result) = result_of(msg.value) else {
            continue;
        };
        if !seen.whole {
            // A page with values left out is no page to judge by.
            conversation
                .catalog
                .drop_walk(super::Unjudged::ObservationCut);
            out.unjudged(super::Unjudged::ObservationCut);
            continue;
        }
        let cursor = request
            .value
            .pointer("/params/cursor")
            .and_then(Value::as_str);
        let facts = conversation.catalog.page(
            cursor,
            result,
            seen.end_us,
            limits.max_catalog_bytes,
            schemas,
        );
        if facts.cut {
            out.cuts.catalogs_too_large += 1;
        }
        if let Some(cursor) = facts.cursor_repeated {
            let detail = format!("nextCursor {cursor:?} came already in this listing");
            out.warn(
                RuleId::McpToolsListCursorLoop,
                Some(msg),
                "/result/nextCursor",
                detail,
            );
        }
        for name in facts.duplicates {
            let detail = format!("tool {name:?} is listed twice in one catalog");
            out.warn(
                RuleId::McpToolsListNameDuplicate,
                Some(msg),
                "/result/tools",
                detail,
            );
        }
    }
}
