//! Enforce mode's answer, configured and worded: `enforce.status` (file, `TOOLTAP_ENFORCE_STATUS`,
//! `--enforce-status`) replaces the buffered refusal's 502 with any 4xx/5xx (a client that retries
//! 502s, like the Vercel AI SDK, paid three more calls) while keeping the dialect's error shape;
//! any other status is refused at start naming the key. A refusal caused by the request says the
//! request broke the contract, and a request that continues a server-held Anthropic thread
//! (the SDK's tool runner) is not refused at all.

use clap::Parser;
use tooltap::cli::{Cli, Command};
use tooltap::config::{Config, EnvLayer, RawConfig};

use crate::config::temp_toml;
use crate::enforce::post_fixture;
use crate::engine_support::fixture;
use crate::support::fixtures::fixture_upstream;
use crate::support::proxy;

#[tokio::test]
async fn enforce_status_422_from_the_config_file_keeps_each_dialects_error_shape() {
    let chat = fixture("buffered_arguments_object");
    let anthropic = fixture("anthropic_response_input_string");
    let upstream = fixture_upstream(&[chat.clone(), anthropic.clone()]).await;
    let file = temp_toml(
        "enforce-status",
        "[inspect]\nenforce = true\n\n[enforce]\nstatus = 422\n",
    );
    let raw = proxy::raw_config(&upstream.url())
        .overlay(tooltap::config::read_file(&file).expect("valid file"));
    let tooltap = proxy::start(raw).await;

    let refused = post_fixture(&tooltap, &chat).await;
    assert_eq!(refused.status, 422);
    assert_eq!(refused.headers["x-should-retry"], "false");
    let error = &refused.json()["error"];
    assert_eq!(error["code"], "contract_violation", "{error}");
    assert_eq!(error["type"], "tooltap_contract_violation");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("tooltap enforce: the response broke the function-calling contract"),
        "{message}"
    );

    let refused = post_fixture(&tooltap, &anthropic).await;
    assert_eq!(refused.status, 422);
    let body = refused.json();
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], "tooltap_contract_violation");
}

#[tokio::test]
async fn a_continued_anthropic_thread_passes_and_a_request_fault_names_the_request() {
    let continued = fixture("anthropic_pass_thread_continue_json");
    let orphan = fixture("anthropic_request_tool_result_orphan_after_continue");
    let upstream = fixture_upstream(&[continued.clone(), orphan.clone()]).await;
    let mut raw = proxy::raw_config(&upstream.url());
    raw.inspect.enforce = Some(true);
    let tooltap = proxy::start(raw).await;

    // The tool runner's continued turn: only the new tool_result, its tool_use server-side.
    let passed = post_fixture(&tooltap, &continued).await;
    assert_eq!(
        passed.status,
        200,
        "{}",
        String::from_utf8_lossy(&passed.body)
    );
    assert_eq!(passed.body, continued.body, "passes byte for byte");

    // A real orphan later in the same request is still refused, as the request's fault.
    let refused = post_fixture(&tooltap, &orphan).await;
    assert_eq!(refused.status, 502);
    let body = refused.json();
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("tooltap enforce: the request broke the function-calling contract"),
        "{message}"
    );
    assert!(
        message
            .contains("anthropic.request.tool_result_orphan at /messages/2/content/1/tool_use_id"),
        "{message}"
    );
    assert!(!message.contains("the response broke"), "{message}");
}

fn proxy_layer(argv: &[&str]) -> (Option<std::path::PathBuf>, RawConfig) {
    let full = ["tooltap", "proxy"].iter().chain(argv);
    match Cli::try_parse_from(full).expect("parses").command {
        Command::Proxy(args) => args.into_layer(),
        other => panic!("proxy expected, got {other:?}"),
    }
}

#[test]
fn enforce_status_comes_from_flag_env_and_file_and_only_as_an_error_status() {
    let env = |value: &str| {
        let value = value.to_owned();
        EnvLayer::read(move |name| (name == "TOOLTAP_ENFORCE_STATUS").then(|| value.clone()))
            .expect("env layer")
    };
    let status = |config: Config| config.inspect.enforce_status.as_u16();
    let default = Config::from_layers(None, EnvLayer::default(), RawConfig::default());
    assert_eq!(status(default.expect("valid")), 502);
    let (_, cli) = proxy_layer(&["--enforce-status", "429"]);
    let flagged = Config::from_layers(None, env("422"), cli).expect("valid");
    assert_eq!(status(flagged), 429, "the flag beats the environment");
    let from_env = Config::from_layers(None, env("422"), RawConfig::default()).expect("valid");
    assert_eq!(status(from_env), 422);

    for bad in ["200", "302", "99", "600"] {
        let file = temp_toml(
            "enforce-status-bad",
            &format!("[enforce]\nstatus = {bad}\n"),
        );
        let error = Config::from_layers(
            Some(file.to_path_buf()),
            EnvLayer::default(),
            RawConfig::default(),
        )
        .expect_err("a status that is no error is refused");
        let message = error.to_string();
        assert!(message.contains("enforce.status"), "{message}");
        assert!(message.contains(bad), "{message}");
    }
}
