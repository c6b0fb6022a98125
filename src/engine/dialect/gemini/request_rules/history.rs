//! The history rules over `contents[]`: `gemini.request.function_response_count_mismatch`,
//! `function_response_name_mismatch`, `function_response_id_mismatch`,
//! `function_response_not_object`, `replayed_args_not_object` and `missing_thought_signature`.
//!
//! Input: the parsed request body and the model the path names. Output: request-stage
//! violations at pointers into `contents[]`. Readings:
//! - A run of consecutive `model` contents is one model turn, and the run of other contents
//!   after it (`user`, or any other role) is the turn that answers it: its `functionResponse`
//!   parts must be as many as the model turn's `functionCall` parts. A response is paired with
//!   the call that has its `id`, else with the next unanswered call of its name (parallel
//!   responses may come in any order); a response whose name no call of the turn has is a name
//!   mismatch, one paired by name to a call with an `id` it does not repeat an id mismatch.
//! - The current turn is every content after the last non-`model` content with a `text` part
//!   (a turn of function responses only does not start one). Each `model` content in it is a
//!   step, and the first `functionCall` part of each step must carry a `thoughtSignature`: an
//!   error for `gemini-3*` models, which answer 400 without one, a warning for others. The
//!   sentinel `skip_thought_signature_validator` counts as a signature.
//!
//! The work is one pass over `contents` (and one backwards to find the current turn), holding
//! the calls and responses of one turn at a time as positions and borrowed names.

use std::collections::{HashMap, VecDeque};

use serde_json::Value;

use super::keyed;
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;

/// A `functionCall` or `functionResponse` part: where it is and what it names.
#[derive(Debug, Clone, Copy)]
struct Piece<'v> {
    content: usize,
    part: usize,
    /// The member's spelling (`functionCall` / `function_call`, ...), for pointers.
    key: &'static str,
    name: Option<&'v str>,
    id: Option<&'v str>,
}

impl Piece<'_> {
    fn pointer(&self, suffix: &str) -> String {
        format!(
            "/contents/{}/parts/{}/{}{suffix}",
            self.content, self.part, self.key
        )
    }
}

/// The calls of a model turn and the responses of the turn after it.
#[derive(Default)]
struct Round<'v> {
    /// The first content of the model turn, when one came.
    calls_at: Option<usize>,
    calls: Vec<Piece<'v>>,
    /// The first content of the answering turn.
    answers_at: usize,
    answers: Vec<Piece<'v>>,
}

fn parts(content: &Value) -> &[Value] {
    content
        .get("parts")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn is_model(content: &Value) -> bool {
    content.get("role").and_then(Value::as_str) == Some("model")
}

/// The part's `functionCall` or `functionResponse` (by `camel` / `snake`) as a [`Piece`].
fn piece<'v>(
    part: &'v Value,
    (content, position): (usize, usize),
    camel: &'static str,
    snake: &'static str,
) -> Option<(Piece<'v>, &'v Value)> {
    let (key, member) = keyed(part, camel, snake)?;
    let text = |field: &str| member.get(field).and_then(Value::as_str);
    let piece = Piece {
        content,
        part: position,
        key,
        name: text("name"),
        id: text("id"),
    };
    Some((piece, member))
}

/// Judges the history of `contents[]`; `model` is the model the path names. `cached`: the
/// request names a `cachedContent`, whose contents come first, so responses that open the
/// request may answer a call the cache holds.
pub(super) fn check(request: &Value, model: Option<&str>, cached: bool, judge: &mut Judge<'_>) {
    let Some(contents) = request.get("contents").and_then(Value::as_array) else {
        return;
    };
    let strict = model.is_some_and(|m| m.to_ascii_lowercase().starts_with("gemini-3"));
    let current_turn = contents
        .iter()
        .rposition(|c| !is_model(c) && parts(c).iter().any(|p| p.get("text").is_some()))
        .map_or(0, |at| at + 1);
    let mut round = Round::default();
    let mut previous_model: Option<bool> = None;
    for (at, content) in contents.iter().enumerate() {
        let model_turn = is_model(content);
        match (previous_model, model_turn) {
            (Some(false), true) => {
                judge_round(&round, cached, judge);
                round = Round::default();
                round.calls_at = Some(at);
            }
            (None, true) => round.calls_at = Some(at),
            (Some(true) | None, false) => round.answers_at = at,
            _ => {}
        }
        previous_model = Some(model_turn);
        let mut first_call = true;
        for (position, part) in parts(content).iter().enumerate() {
            if model_turn
                && let Some((call, member)) =
                    piece(part, (at, position), "functionCall", "function_call")
            {
                args_object(&call, member, judge);
                if first_call && at >= current_turn {
                    signature(&call, part, strict, judge);
                }
                first_call = false;
                round.calls.push(call);
            }
            if let Some((answer, member)) = piece(
                part,
                (at, position),
                "functionResponse",
                "function_response",
            ) {
                response_object(&answer, member, judge);
                if !model_turn {
                    round.answers.push(answer);
                }
            }
        }
    }
    if previous_model == Some(false) {
        judge_round(&round, cached, judge);
    }
}

fn args_object(call: &Piece<'_>, member: &Value, judge: &mut Judge<'_>) {
    match member.get("args") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(args) => {
            let detail = format!(
                "a replayed functionCall.args must be an object, got {}",
                preview(args)
            );
            judge.flag(
                RuleId::GeminiRequestReplayedArgsNotObject,
                call.pointer("/args"),
                detail,
            );
        }
    }
}

fn response_object(answer: &Piece<'_>, member: &Value, judge: &mut Judge<'_>) {
    let (pointer, shown) = match member.get("response") {
        Some(Value::Object(_)) => return,
        Some(response) => (answer.pointer("/response"), preview(response)),
        None => (answer.pointer(""), "nothing".to_owned()),
    };
    let detail = format!("functionResponse.response must be a JSON object, got {shown}");
    judge.flag(
        RuleId::GeminiRequestFunctionResponseNotObject,
        pointer,
        detail,
    );
}

/// The first call of a current-turn step needs its part's `thoughtSignature`.
fn signature(call: &Piece<'_>, part: &Value, strict: bool, judge: &mut Judge<'_>) {
    let signed = keyed(part, "thoughtSignature", "thought_signature")
        .and_then(|(_, signature)| signature.as_str())
        .is_some_and(|signature| !signature.is_empty());
    if signed {
        return;
    }
    let pointer = format!("/contents/{}/parts/{}", call.content, call.part);
    let detail = "the first functionCall of a current-turn step is replayed without its thoughtSignature (Gemini 3 answers 400)";
    let rule = RuleId::GeminiRequestMissingThoughtSignature;
    judge.flag_or_warn(strict, rule, pointer, detail);
}

/// Pairs a model turn's calls with the responses of the turn after it (`cached`: responses
/// with no model turn before them in the request may answer the cache's, and are not judged).
fn judge_round(round: &Round<'_>, cached: bool, judge: &mut Judge<'_>) {
    if cached && round.calls_at.is_none() {
        return;
    }
    let (calls, answers) = (&round.calls, &round.answers);
    if calls.len() != answers.len() {
        let after = match round.calls_at {
            Some(at) => format!("the model turn at /contents/{at}"),
            None => "no model turn".to_owned(),
        };
        let (answered, called) = (answers.len(), calls.len());
        let detail = format!(
            "{answered} functionResponse parts answer {called} functionCall parts of {after}"
        );
        let pointer = format!("/contents/{}", round.answers_at);
        judge.flag(
            RuleId::GeminiRequestFunctionResponseCountMismatch,
            pointer,
            detail,
        );
    }
    if !calls.is_empty() {
        pair(calls, answers, judge);
    }
}

/// Pairs each response with a call, by id first and then by name in order, and judges the
/// pairs.
fn pair(calls: &[Piece<'_>], answers: &[Piece<'_>], judge: &mut Judge<'_>) {
    let mut answered = vec![false; calls.len()];
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    let mut by_name: HashMap<&str, VecDeque<usize>> = HashMap::new();
    for (index, call) in calls.iter().enumerate() {
        if let Some(id) = call.id {
            by_id.entry(id).or_insert(index);
        }
        by_name
            .entry(call.name.unwrap_or(""))
            .or_default()
            .push_back(index);
    }
    let mut unpaired = Vec::new();
    for answer in answers {
        let call = answer.id.and_then(|id| by_id.get(id)).copied();
        match call {
            Some(index) if !answered[index] => {
                answered[index] = true;
                if calls[index].name != answer.name {
                    name_mismatch(answer, Some(&calls[index]), judge);
                }
            }
            _ => unpaired.push(answer),
        }
    }
    for answer in unpaired {
        let Some(waiting) = by_name.get_mut(answer.name.unwrap_or("")) else {
            name_mismatch(answer, None, judge);
            continue;
        };
        while waiting.front().is_some_and(|&index| answered[index]) {
            waiting.pop_front();
        }
        // None: more responses of this name than calls (the count mismatch says so).
        let Some(index) = waiting.pop_front() else {
            continue;
        };
        answered[index] = true;
        if let Some(id) = calls[index].id {
            id_mismatch(answer, &calls[index], id, judge);
        }
    }
}

/// A response paired by name with a call whose `id` it does not echo.
fn id_mismatch(answer: &Piece<'_>, call: &Piece<'_>, id: &str, judge: &mut Judge<'_>) {
    let pointer = match answer.id {
        Some(_) => answer.pointer("/id"),
        None => answer.pointer(""),
    };
    let got = answer
        .id
        .map(|id| preview(&Value::String(id.to_owned())))
        .unwrap_or_else(|| "none".into());
    let (content, part) = (call.content, call.part);
    let id = preview(&Value::String(id.to_owned()));
    let detail = format!(
        "the call at /contents/{content}/parts/{part} has id {id}, its response's id is {got}"
    );
    judge.flag(
        RuleId::GeminiRequestFunctionResponseIdMismatch,
        pointer,
        detail,
    );
}

/// `call`: the call the response's id pairs it with; `None` when no call has its name.
fn name_mismatch(answer: &Piece<'_>, call: Option<&Piece<'_>>, judge: &mut Judge<'_>) {
    let show = |name: Option<&str>| {
        name.map(|n| preview(&Value::String(n.to_owned())))
            .unwrap_or_else(|| "no name".into())
    };
    let against = match call {
        Some(call) => format!(
            "its call (same id) at /contents/{}/parts/{} is {}",
            call.content,
            call.part,
            show(call.name)
        ),
        None => "no call of the model turn has that name".to_owned(),
    };
    let pointer = match answer.name {
        Some(_) => answer.pointer("/name"),
        None => answer.pointer(""),
    };
    let detail = format!("functionResponse.name is {}: {against}", show(answer.name));
    judge.flag(
        RuleId::GeminiRequestFunctionResponseNameMismatch,
        pointer,
        detail,
    );
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{judged, one};
    use super::*;

    const GEMINI_2: &str = "/v1beta/models/gemini-2.5-flash:generateContent";
    const GEMINI_3: &str = "/v1beta/models/gemini-3-pro-preview:generateContent";
    const SIGNED: &str = "c2lnbmF0dXJl";

    fn user(text: &str) -> Value {
        json!({"role": "user", "parts": [{"text": text}]})
    }

    fn call(name: &str, id: Option<&str>, signature: Option<&str>) -> Value {
        let mut part = json!({"functionCall": {"name": name, "args": {"city": "Paris"}}});
        if let Some(id) = id {
            part["functionCall"]["id"] = json!(id);
        }
        if let Some(signature) = signature {
            part["thoughtSignature"] = json!(signature);
        }
        part
    }

    fn answer(name: &str, id: Option<&str>) -> Value {
        let mut part = json!({"functionResponse": {"name": name, "response": {"temp": 21}}});
        if let Some(id) = id {
            part["functionResponse"]["id"] = json!(id);
        }
        part
    }

    fn model(parts: Vec<Value>) -> Value {
        json!({"role": "model", "parts": parts})
    }

    fn answers(parts: Vec<Value>) -> Value {
        json!({"role": "user", "parts": parts})
    }

    fn contents(contents: Vec<Value>) -> Value {
        json!({"contents": contents})
    }

    #[test]
    fn a_signed_loop_with_parallel_answers_in_any_order_is_clean() {
        let body = contents(vec![
            user("weather in Paris and London, then the time?"),
            model(vec![
                call("get_weather", Some("c1"), Some(SIGNED)),
                call("get_weather", Some("c2"), None),
                call("get_time", None, None),
            ]),
            answers(vec![
                answer("get_time", None),
                answer("get_weather", Some("c2")),
                answer("get_weather", Some("c1")),
            ]),
            model(vec![
                json!({"text": "thinking", "thought": true}),
                call(
                    "get_weather",
                    None,
                    Some("skip_thought_signature_validator"),
                ),
            ]),
            answers(vec![answer("get_weather", None)]),
        ]);
        assert!(
            judged(&body, GEMINI_3).is_empty(),
            "{:?}",
            judged(&body, GEMINI_3)
        );
        // In snake_case too.
        let snake = json!({"contents": [
            user("go"),
            {"role": "model", "parts": [{"function_call": {"name": "f", "args": {}, "id": "x"}, "thought_signature": SIGNED}]},
            {"role": "user", "parts": [{"function_response": {"name": "f", "response": {}, "id": "x"}}]}
        ]});
        assert!(judged(&snake, GEMINI_3).is_empty());
    }

    #[test]
    fn response_counts_must_match_the_preceding_model_turn() {
        let mismatch = |found: Vec<(&'static str, String, &'static str)>, at: &str| {
            assert_eq!(
                found,
                one(
                    "gemini.request.function_response_count_mismatch",
                    at.to_owned(),
                    "error"
                )
            );
        };
        let fewer = contents(vec![
            user("go"),
            model(vec![call("a", None, Some(SIGNED)), call("b", None, None)]),
            answers(vec![answer("a", None)]),
        ]);
        mismatch(judged(&fewer, GEMINI_3), "/contents/2");
        let more = contents(vec![
            user("go"),
            model(vec![call("a", None, Some(SIGNED))]),
            answers(vec![answer("a", None), answer("a", None)]),
        ]);
        mismatch(judged(&more, GEMINI_3), "/contents/2");
        let text_instead = contents(vec![
            user("go"),
            model(vec![call("a", None, Some(SIGNED))]),
            user("never mind"),
        ]);
        mismatch(judged(&text_instead, GEMINI_3), "/contents/2");
        let nothing_asked = contents(vec![
            user("go"),
            model(vec![json!({"text": "ok"})]),
            answers(vec![answer("a", None)]),
        ]);
        mismatch(judged(&nothing_asked, GEMINI_3), "/contents/2");
        let first = contents(vec![answers(vec![answer("a", None)])]);
        mismatch(judged(&first, GEMINI_3), "/contents/0");
        // Split turns are one turn on each side; a model turn last is not answered yet.
        let split = contents(vec![
            user("go"),
            model(vec![call("a", None, Some(SIGNED))]),
            model(vec![json!({"text": "and"}), call("b", None, Some(SIGNED))]),
            answers(vec![answer("a", None)]),
            json!({"role": "function", "parts": [answer("b", None)]}),
            model(vec![call("c", None, Some(SIGNED))]),
        ]);
        assert!(
            judged(&split, GEMINI_3).is_empty(),
            "{:?}",
            judged(&split, GEMINI_3)
        );
    }

    #[test]
    fn responses_opening_a_request_on_cached_content_may_answer_the_cache() {
        let mut body = contents(vec![
            answers(vec![answer("get_weather", None)]),
            model(vec![call("get_weather", None, Some(SIGNED))]),
            answers(vec![answer("get_time", None)]),
        ]);
        body["cachedContent"] = json!("cachedContents/abc");
        assert_eq!(
            judged(&body, GEMINI_3),
            one(
                "gemini.request.function_response_name_mismatch",
                "/contents/2/parts/0/functionResponse/name",
                "error"
            )
        );
        body.as_object_mut()
            .expect("object")
            .remove("cachedContent");
        let found = judged(&body, GEMINI_3);
        assert_eq!(
            found.first().map(|(rule, path, _)| (*rule, path.as_str())),
            Some((
                "gemini.request.function_response_count_mismatch",
                "/contents/0"
            ))
        );
    }

    #[test]
    fn names_and_ids_pair_each_response_with_its_call() {
        let wrong_name = contents(vec![
            user("go"),
            model(vec![call("get_weather", None, Some(SIGNED))]),
            answers(vec![answer("get_time", None)]),
        ]);
        assert_eq!(
            judged(&wrong_name, GEMINI_3),
            one(
                "gemini.request.function_response_name_mismatch",
                "/contents/2/parts/0/functionResponse/name",
                "error"
            )
        );
        let same_id_other_name = contents(vec![
            user("go"),
            model(vec![call("get_weather", Some("c1"), Some(SIGNED))]),
            answers(vec![answer("get_time", Some("c1"))]),
        ]);
        assert_eq!(
            judged(&same_id_other_name, GEMINI_3),
            one(
                "gemini.request.function_response_name_mismatch",
                "/contents/2/parts/0/functionResponse/name",
                "error"
            )
        );
        let ids = contents(vec![
            user("go"),
            model(vec![
                call("f", Some("c1"), Some(SIGNED)),
                call("f", Some("c2"), None),
                call("g", None, None),
            ]),
            answers(vec![
                answer("f", Some("c9")),
                answer("f", None),
                answer("g", Some("extra")),
            ]),
        ]);
        assert_eq!(
            judged(&ids, GEMINI_3),
            [
                (
                    "gemini.request.function_response_id_mismatch",
                    "/contents/2/parts/0/functionResponse/id".into(),
                    "warning"
                ),
                (
                    "gemini.request.function_response_id_mismatch",
                    "/contents/2/parts/1/functionResponse".into(),
                    "warning"
                ),
            ]
        );
    }

    #[test]
    fn responses_must_be_objects_and_replayed_args_too() {
        let body = contents(vec![
            user("go"),
            model(vec![
                json!({"functionCall": {"name": "a", "args": "{\"city\":\"Paris\"}"}, "thoughtSignature": SIGNED}),
                json!({"functionCall": {"name": "b", "args": [1]}}),
                json!({"functionCall": {"name": "c"}}),
            ]),
            answers(vec![
                json!({"functionResponse": {"name": "a", "response": "sunny"}}),
                json!({"functionResponse": {"name": "b"}}),
                json!({"functionResponse": {"name": "c", "response": {"output": "ok"}}}),
            ]),
        ]);
        assert_eq!(
            judged(&body, GEMINI_3),
            [
                (
                    "gemini.request.replayed_args_not_object",
                    "/contents/1/parts/0/functionCall/args".into(),
                    "error"
                ),
                (
                    "gemini.request.replayed_args_not_object",
                    "/contents/1/parts/1/functionCall/args".into(),
                    "error"
                ),
                (
                    "gemini.request.function_response_not_object",
                    "/contents/2/parts/0/functionResponse/response".into(),
                    "error"
                ),
                (
                    "gemini.request.function_response_not_object",
                    "/contents/2/parts/1/functionResponse".into(),
                    "error"
                ),
            ]
        );
    }

    #[test]
    fn only_the_first_call_of_each_current_turn_step_needs_a_signature() {
        let body = contents(vec![
            user("earlier question"),
            model(vec![call("a", None, None)]),
            answers(vec![answer("a", None)]),
            model(vec![json!({"text": "done"})]),
            user("now this"),
            model(vec![call("a", None, None), call("b", None, None)]),
            answers(vec![answer("a", None), answer("b", None)]),
            model(vec![
                json!({"text": "", "thoughtSignature": SIGNED}),
                call("c", None, Some("")),
            ]),
            answers(vec![answer("c", None)]),
            model(vec![call("d", None, Some(SIGNED)), call("e", None, None)]),
        ]);
        let expected = |severity: &'static str| {
            vec![
                (
                    "gemini.request.missing_thought_signature",
                    "/contents/5/parts/0".to_owned(),
                    severity,
                ),
                (
                    "gemini.request.missing_thought_signature",
                    "/contents/7/parts/1".to_owned(),
                    severity,
                ),
            ]
        };
        assert_eq!(judged(&body, GEMINI_3), expected("error"));
        assert_eq!(judged(&body, GEMINI_2), expected("warning"));
        assert_eq!(
            judged(
                &body,
                "/v1/projects/p/locations/l/publishers/google/models/Gemini-3-Flash:generateContent"
            ),
            expected("error")
        );
        // A request whose last user turn has text has no current-turn steps yet.
        let mut asked = body.clone();
        asked["contents"]
            .as_array_mut()
            .expect("array")
            .push(user("and now?"));
        let found = judged(&asked, GEMINI_3);
        assert!(
            found
                .iter()
                .all(|(rule, ..)| *rule == "gemini.request.function_response_count_mismatch"),
            "{found:?}"
        );
    }
}
