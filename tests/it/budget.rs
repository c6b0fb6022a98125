//! Inspection budgets under attack, through the real proxy and a real upstream: schema work
//! that would be exponential, schemas that never get a 2xx answer, and responses with tens of
//! thousands of violations. Each attack ends as a counted, bounded outcome (`schema_budget`,
//! a cache under its byte bound, a capped violations list), the client gets every byte, and a
//! normal request made during the attack is not delayed.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::client::{exchange, request};
use crate::support::fixtures::settle;
use crate::support::metrics::assert_metric;
use crate::support::metrics::{metric_sum, metrics};
use crate::support::proxy;
use crate::support::temp::files_under;
use crate::support::temp::temp_file;
use crate::support::upstream::{Script, Upstream};
use crate::support::within;
use tooltap::proxy::server::RunningProxy;
use tooltap::record::RecordMode;

const LIMIT: Duration = Duration::from_secs(60);

/// A request declaring one tool `f` with `parameters`, tagged so the upstream knows what to send.
fn request_with(parameters: &Value) -> String {
    json!({"model":"m","messages":[{"role":"user","content":"hi"}],
        "tools":[{"type":"function","function":{"name":"f","parameters":parameters}}]})
    .to_string()
}

/// A buffered completion calling each of `calls` (name, arguments text).
pub fn completion(calls: &[(&str, String)]) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, arguments))| {
            json!({"id":format!("call_{i}"),"type":"function",
                "function":{"name":name,"arguments":arguments}})
        })
        .collect();
    json!({"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,
        "finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":calls}}]})
    .to_string()
}

/// `{"x": [[...[1]...]]}` nested `depth` deep.
fn nested_arrays(depth: usize) -> String {
    format!("{{\"x\":{}1{}}}", "[".repeat(depth), "]".repeat(depth))
}

/// `{"a": {"a": ... 1 ...}}` nested `depth` deep.
fn nested_objects(depth: usize) -> String {
    format!("{}1{}", "{\"aa\":".repeat(depth), "}".repeat(depth))
}

/// The issue's case: anyOf of two array branches that both `$ref` back to the root.
fn any_of_recursion() -> Value {
    json!({"anyOf":[{"type":"array","items":{"$ref":"#"}},{"type":"array","items":{"$ref":"#"}},
        {"type":"object","additionalProperties":{"$ref":"#"}}]})
}

/// Another class: every property matches three `patternProperties` that all recurse.
fn pattern_properties_recursion() -> Value {
    json!({"type":"object","patternProperties":{"^a":{"$ref":"#"},"a$":{"$ref":"#"},".":{"$ref":"#"}}})
}

fn normal_schema() -> Value {
    json!({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})
}

async fn scripted_upstream() -> Upstream {
    Upstream::start(
        |received| {
            let body = String::from_utf8_lossy(&received.body);
            let arguments = if body.contains("anyOf") {
                nested_arrays(24)
            } else if body.contains("patternProperties") {
                nested_objects(16)
            } else {
                r#"{"city":"Paris"}"#.to_owned()
            };
            Script::full(200, "application/json", &completion(&[("f", arguments)]))
        },
        None,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exponential_schemas_end_as_schema_budget_and_never_delay_a_normal_request() {
    let upstream = scripted_upstream().await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let addr = tooltap.local_addr();
    let attacks: Vec<_> = (0..4)
        .map(|n| {
            let schema = if n % 2 == 0 {
                any_of_recursion()
            } else {
                pattern_properties_recursion()
            };
            tokio::spawn(async move {
                let mut bodies = Vec::new();
                for _ in 0..3 {
                    let req = request(addr, "POST", "/v1/chat/completions", &request_with(&schema));
                    bodies.push(exchange(addr, req).await.body);
                }
                (schema, bodies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let req = request(
            addr,
            "POST",
            "/v1/chat/completions",
            &request_with(&normal_schema()),
        );
        let got = within(LIMIT, exchange(addr, req)).await;
        latencies.push(started.elapsed());
        assert_eq!(got.status, 200);
    }
    for attack in attacks {
        let (schema, bodies) = within(LIMIT, attack).await.expect("attacker");
        let arguments = if schema == any_of_recursion() {
            nested_arrays(24)
        } else {
            nested_objects(16)
        };
        let expected = completion(&[("f", arguments)]);
        for body in bodies {
            assert_eq!(body, expected.as_bytes(), "the client gets every byte");
        }
    }
    attack_ended_in_budget_only(&tooltap, latencies, Duration::from_millis(100), 32, 12).await;
}

/// How an attack test ends: the normal requests' p50 under `p50_bound`, `settled` exchanges
/// reported, `budget` of them `schema_budget` (every attacking one, and only those), and no
/// violation (a budget is never one).
pub async fn attack_ended_in_budget_only(
    tooltap: &RunningProxy,
    mut latencies: Vec<Duration>,
    p50_bound: Duration,
    settled: u64,
    budget: u64,
) {
    latencies.sort();
    let p50 = latencies[latencies.len() / 2];
    assert!(p50 < p50_bound, "p50 {p50:?}: {latencies:?}");
    let text = settle(tooltap, settled).await;
    let hits = metric_sum(
        &text,
        "tooltap_inspection_incomplete_total",
        &["reason=\"schema_budget\""],
    );
    assert_eq!(hits, budget, "every attacking exchange, and only those");
    assert_metric!(
        text,
        "tooltap_violations_total",
        [] == 0,
        "a budget is never a violation"
    );
}

/// A `tools` array of `count` tools, each with a schema of a few hundred bytes, made distinct by
/// `tag`.
fn big_tools(tag: usize, count: usize) -> Value {
    let tools: Vec<Value> = (0..count)
        .map(|i| {
            json!({"type":"function","function":{"name":format!("tool_{i}"),
                "description":format!("variant {tag}: {}", "d".repeat(200)),
                "parameters":{"type":"object","properties":{"a":{"type":"string","pattern":"^[a-z]+$"},
                    "b":{"type":"integer","minimum":0}},"required":["a"]}}})
        })
        .collect();
    Value::Array(tools)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_cache_is_bounded_by_bytes_and_unanswered_tools_pin_nothing() {
    const CACHE_BYTES: usize = 4 * 1024 * 1024;
    let upstream = Upstream::start(
        |received| {
            if received.headers.contains_key("x-deny") {
                Script::full(401, "application/json", r#"{"error":"no"}"#)
            } else {
                Script::full(200, "application/json", &completion(&[]))
            }
        },
        None,
    )
    .await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.schema_cache_bytes = Some(CACHE_BYTES);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let send = |tag: usize, deny: bool| {
        let body = json!({"model":"m","messages":[],"tools":big_tools(tag, 200)}).to_string();
        let mut req = request(addr, "POST", "/v1/chat/completions", &body);
        if deny {
            req.headers_mut()
                .insert("x-deny", "1".parse().expect("value"));
        }
        exchange(addr, req)
    };
    for tag in 0..30 {
        assert_eq!(within(LIMIT, send(tag, true)).await.status, 401);
    }
    let text = settle(&tooltap, 30).await;
    assert_metric!(
        text,
        "tooltap_schema_cache_bytes",
        [] == 0,
        "tools answered 401 are not kept"
    );
    for tag in 100..130 {
        assert_eq!(within(LIMIT, send(tag, false)).await.status, 200);
    }
    settle(&tooltap, 60).await;
    let cached = tooltap.state().admission.inspection().schemas.bytes();
    assert!(cached > 0, "answered tools are cached");
    assert!(cached <= CACHE_BYTES, "{cached} > {CACHE_BYTES}");
    let text = metrics(&tooltap).await;
    assert_metric!(text, "tooltap_schema_cache_bytes", [] == cached as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_undeclared_calls_give_a_capped_list_and_a_count() {
    const RECORDING_CAP: u64 = 120 * 1024;
    let calls: Vec<(&str, String)> = (0..20_000).map(|_| ("nope", "{}".to_owned())).collect();
    let response = completion(&calls);
    let upstream = Upstream::serving(Script::full(200, "application/json", &response)).await;
    let violations = temp_file("budget-violations.jsonl");
    let recordings = temp_file("budget-recordings");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.violations = Some(violations.clone());
    raw.record.mode = Some(RecordMode::All);
    raw.record.dir = Some(recordings.clone());
    raw.record.max_bytes_per_recording = Some(RECORDING_CAP);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let tools: Vec<Value> = (0..2_000)
        .map(|i| json!({"type":"function","function":{"name":format!("tool_{i}")}}))
        .collect();
    let body = json!({"model":"m","messages":[],"tools":tools}).to_string();
    let got = within(
        LIMIT,
        exchange(addr, request(addr, "POST", "/v1/chat/completions", &body)),
    )
    .await;
    assert_eq!(got.body, response.as_bytes(), "the client gets every byte");
    settle(&tooltap, 1).await;
    // The count is emitted after the listed violations: wait for it, then for the file.
    let text = within(LIMIT, async {
        loop {
            let text = metrics(&tooltap).await;
            if metric_sum(&text, "tooltap_violations_not_listed_total", &[]) > 0 {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    if let Some(sink) = &tooltap.state().admission.inspection().violations {
        within(LIMIT, sink.flush()).await;
    }
    assert_metric!(text, "tooltap_violations_not_listed_total", [] == 19_900);
    assert_metric!(text, "tooltap_violations_total", [] == 100);
    let written = std::fs::read_to_string(&violations).expect("violations file");
    let lines: Vec<Value> = written
        .lines()
        .map(|line| serde_json::from_str(line).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 101, "100 violations and one summary");
    assert_eq!(lines[100]["summary"], "violations_not_listed");
    assert_eq!(lines[100]["not_listed"], 19_900);
    assert!(written.len() < 100 * 1024, "{} bytes", written.len());
    if let Some(recorder) = &tooltap.state().admission.inspection().recorder {
        within(LIMIT, recorder.flush()).await;
    }
    let files = files_under(&recordings);
    assert_eq!(files.len(), 1, "{files:?}");
    let size = std::fs::metadata(&files[0]).expect("recording").len();
    // The cap counts bodies, frames and the end line; the first line's fixed fields are extra.
    assert!(size <= RECORDING_CAP + 4096, "recording of {size} bytes");
    let recording = tooltap::record::read_file(&files[0]).expect("readable");
    let end = recording.end.expect("end line");
    assert!(
        end.violations.len() < 100,
        "{} listed",
        end.violations.len()
    );
}

/// A schema failure's message quotes the whole argument value, so one 8 MiB argument would
/// make an 8.4 MB violations line (and log line), and 25 such exchanges would rotate every
/// earlier line out of the violations file. The sink cuts each violation's texts (and the line's
/// model) to 1 KiB and says so. Here one 8 MiB argument, then 24 of 1 MiB under a 4 MiB
/// rotation size (kept small so the test stays quick: uncut, the 8 MiB line alone would pass
/// it, and the next four rotations would delete it): every line stays, none rotated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_arguments_give_short_violation_lines_that_never_rotate_the_file() {
    const EXCHANGES: u64 = 25;
    let answer = |bytes: usize| {
        let arguments = json!({ "city": "x".repeat(bytes) }).to_string();
        completion(&[("f", arguments)])
    };
    let (eight_mib, one_mib) = (answer(8 * 1024 * 1024), answer(1024 * 1024));
    let scripts = [
        Script::full(200, "application/json", &eight_mib),
        Script::full(200, "application/json", &one_mib),
    ];
    let upstream = Upstream::start(
        move |received| match received.headers.contains_key("x-eight-mib") {
            true => scripts[0].clone(),
            false => scripts[1].clone(),
        },
        None,
    )
    .await;
    let violations = temp_file("budget-long-detail.jsonl");
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.violations = Some(violations.clone());
    raw.record.violations_max_bytes = Some(4 * 1024 * 1024);
    let tooltap = proxy::start(raw).await;
    let addr = tooltap.local_addr();
    let mut body: Value = serde_json::from_str(&request_with(&json!({
        "type": "object", "properties": {"city": {"type": "integer"}}
    })))
    .expect("request");
    body["model"] = "m".repeat(64 * 1024).into();
    let body = body.to_string();
    for n in 0..EXCHANGES {
        let mut req = request(addr, "POST", "/v1/chat/completions", &body);
        if n == 0 {
            req.headers_mut()
                .insert("x-eight-mib", "1".parse().expect("value"));
        }
        let got = within(LIMIT, exchange(addr, req)).await;
        let expected = if n == 0 { &eight_mib } else { &one_mib };
        assert_eq!(got.body.len(), expected.len(), "the client gets every byte");
    }
    settle(&tooltap, EXCHANGES).await;
    let written = std::fs::read_to_string(&violations).expect("violations file");
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(
        lines.len() as u64,
        EXCHANGES,
        "one line per exchange, none rotated away"
    );
    let rotated = violations.with_extension("jsonl.1");
    assert!(
        !rotated.exists(),
        "the file was rotated: {}",
        rotated.display()
    );
    for (n, line) in lines.iter().enumerate() {
        assert!(line.len() < 4 * 1024, "line {n}: {} bytes", line.len());
        let value: Value = serde_json::from_str(line).expect("json line");
        assert_eq!(value["rule"], "tool_call.arguments_schema");
        let detail = value["detail"].as_str().expect("detail");
        assert!(detail.ends_with("bytes, cut)"), "{detail}");
        let model = value["model"].as_str().expect("model");
        assert!(
            model.ends_with("… (65536 bytes, cut)"),
            "{}",
            &model[1000..]
        );
    }
    assert!(
        lines
            .iter()
            .any(|line| line.contains(r#" (8388635 bytes, cut)""#)),
        "one line names its 8 MiB detail's length"
    );
}
