//! Configuration layers through the public API: the documented example is valid, unknown keys
//! are named together with the file, and precedence is flag > env > file > default.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use clap::Parser;
use tooltap::cli::{Cli, Command};
use tooltap::config::{Config, DEFAULT_HEADER_READ_TIMEOUT, EnvLayer, HumanDuration, RawConfig};
use tooltap::record::RecordLayout;

use crate::support::temp::{TempFile, temp_file};

pub(crate) fn temp_toml(name: &str, text: &str) -> TempFile {
    let path = temp_file(&format!("{name}.toml"));
    std::fs::write(&*path, text).expect("write config");
    path
}

fn env(pairs: &[(&str, &str)]) -> EnvLayer {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    EnvLayer::read(|name| map.get(name).cloned()).expect("env layer")
}

#[test]
fn the_documented_example_config_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/tooltap.toml");
    let config = Config::from_layers(Some(path), EnvLayer::default(), RawConfig::default())
        .expect("config/tooltap.toml must stay valid");
    let names: Vec<&str> = config.routes.iter().map(|route| &*route.name).collect();
    assert!(names.contains(&"default"), "{names:?}");
    assert!(
        names.len() > 1,
        "the example should show a named route: {names:?}"
    );
}

#[test]
fn unknown_keys_are_rejected_naming_the_key_and_the_file() {
    for (name, text, key) in [
        (
            "nested",
            "[proxy]\nlisten = \"127.0.0.1:0\"\nupstrem = \"http://x\"\n",
            "upstrem",
        ),
        ("section", "[inspekt]\nenabled = true\n", "inspekt"),
        (
            "route",
            "[[routes]]\nname = \"a\"\nprefix = \"/a\"\nupstream = \"http://a\"\nweight = 2\n",
            "weight",
        ),
    ] {
        let path = temp_toml(name, text);
        let error = Config::from_layers(
            Some(path.clone()),
            EnvLayer::default(),
            RawConfig::default(),
        )
        .expect_err("unknown key accepted");
        let message = error.to_string();
        assert!(message.contains(key), "{message}");
        assert!(message.contains(&path.display().to_string()), "{message}");
    }
}

#[test]
fn flags_beat_env_which_beats_the_file_which_beats_defaults() {
    let path = temp_toml(
        "layers",
        "[proxy]\nlisten = \"127.0.0.1:1111\"\nupstream = \"http://file.example\"\n\
         [timeouts]\nfirst_byte = \"7s\"\nconnect = \"1s\"\n",
    );
    let env_layer = env(&[
        ("TOOLTAP_LISTEN", "127.0.0.1:2222"),
        ("TOOLTAP_UPSTREAM", "http://env.example"),
        ("TOOLTAP_CONNECT_TIMEOUT", "2s"),
    ]);
    let mut cli = RawConfig::default();
    cli.proxy.listen = Some("127.0.0.1:3333".parse().expect("addr"));
    let config = Config::from_layers(Some(path.clone()), env_layer, cli).expect("valid");
    assert_eq!(config.listen.port(), 3333, "flag wins");
    assert_eq!(
        config.routes.default_route().upstream.as_str(),
        "http://env.example"
    );
    assert_eq!(
        config.timeouts.connect,
        Duration::from_secs(2),
        "env beats file"
    );
    assert_eq!(
        config.timeouts.first_byte,
        Duration::from_secs(7),
        "file beats default"
    );
    assert_eq!(config.timeouts.header_read, DEFAULT_HEADER_READ_TIMEOUT);

    // TOOLTAP_CONFIG names the file when --config is absent; --config wins over it.
    let via_env = env(&[("TOOLTAP_CONFIG", path.to_str().expect("utf-8 path"))]);
    let config = Config::from_layers(None, via_env, RawConfig::default()).expect("valid");
    assert_eq!(config.listen.port(), 1111);
    let other = temp_toml("other", "[proxy]\nlisten = \"127.0.0.1:4444\"\n");
    let via_env = env(&[("TOOLTAP_CONFIG", path.to_str().expect("utf-8 path"))]);
    let config =
        Config::from_layers(Some(other.clone()), via_env, RawConfig::default()).expect("valid");
    assert_eq!(config.listen.port(), 4444);
}

#[test]
fn the_record_layout_and_segment_size_come_from_the_file_env_and_flag() {
    let path = temp_toml(
        "layout",
        "[proxy]\nupstream = \"http://file.example\"\n\
         [record]\nmode = \"all\"\nlayout = \"segments\"\nsegment_bytes = 65536\n",
    );
    let config =
        Config::from_layers(Some(path.clone()), env(&[]), RawConfig::default()).expect("valid");
    assert_eq!(config.record.layout, RecordLayout::Segments);
    assert_eq!(config.record.segment_bytes, 65_536);
    let config = Config::from_layers(
        Some(path.clone()),
        env(&[("TOOLTAP_RECORD_LAYOUT", "files")]),
        RawConfig::default(),
    )
    .expect("valid");
    assert_eq!(config.record.layout, RecordLayout::Files, "env beats file");
    let Command::Proxy(args) = Cli::try_parse_from([
        "tooltap",
        "proxy",
        "--upstream",
        "http://flag.example",
        "--record-layout",
        "segments",
    ])
    .expect("parses")
    .command
    else {
        panic!("proxy expected");
    };
    let config = Config::from_layers(
        None,
        env(&[("TOOLTAP_RECORD_LAYOUT", "files")]),
        args.into_layer().1,
    )
    .expect("valid");
    assert_eq!(
        config.record.layout,
        RecordLayout::Segments,
        "flag beats env"
    );
    assert_eq!(config.record.segment_bytes, 4 * 1024 * 1024, "the default");
    let error = EnvLayer::read(|name| (name == "TOOLTAP_RECORD_LAYOUT").then(|| "segment".into()))
        .expect_err("an unknown layout");
    assert!(
        error.to_string().contains("TOOLTAP_RECORD_LAYOUT"),
        "{error}"
    );
}

#[test]
fn bad_values_name_their_source() {
    let error =
        EnvLayer::read(|name| (name == "TOOLTAP_FIRST_BYTE_TIMEOUT").then(|| "10".to_owned()))
            .expect_err("unitless duration accepted");
    assert!(
        error.to_string().contains("TOOLTAP_FIRST_BYTE_TIMEOUT"),
        "{error}"
    );

    let path = temp_toml(
        "badroute",
        "[[routes]]\nname = \"x\"\nprefix = \"/x\"\nupstream = \"ftp://x\"\n",
    );
    let error = Config::from_layers(
        Some(path.clone()),
        EnvLayer::default(),
        RawConfig::default(),
    )
    .expect_err("ftp upstream accepted");
    let message = error.to_string();
    assert!(
        message.contains("routes[0]") && message.contains(&path.display().to_string()),
        "{message}"
    );

    let mut cli = RawConfig::default();
    cli.timeouts.first_byte = Some(HumanDuration(Duration::from_secs(1)));
    cli.proxy.upstream = Some("not a url".into());
    let error = Config::from_layers(None, EnvLayer::default(), cli).expect_err("bad upstream");
    assert!(error.to_string().contains("--upstream"), "{error}");
}

#[test]
fn booleans_take_the_usual_spellings_and_zero_workers_is_refused() {
    for (text, want) in [
        ("1", true),
        ("yes", true),
        ("ON", true),
        ("0", false),
        ("off", false),
    ] {
        let layer = env(&[("TOOLTAP_ENFORCE", text), ("TOOLTAP_INSPECT", text)]);
        assert_eq!(layer.raw.inspect.enforce, Some(want), "{text}");
        assert_eq!(layer.raw.inspect.enabled, Some(want), "{text}");
    }
    let error = EnvLayer::read(|name| (name == "TOOLTAP_ENFORCE").then(|| "maybe".to_owned()))
        .expect_err("not a boolean");
    assert!(error.to_string().contains("TOOLTAP_ENFORCE"), "{error}");

    let mut cli = RawConfig::default();
    cli.runtime.worker_threads = Some(0);
    let error = Config::from_layers(None, EnvLayer::default(), cli).expect_err("0 workers");
    assert!(
        error.to_string().contains("runtime.worker_threads"),
        "{error}"
    );
}

#[test]
fn routes_and_the_default_route_name_their_dialect() {
    use tooltap::engine::Dialect;
    let path = temp_toml(
        "dialects",
        "[proxy]\ndialect = \"responses\"\n\
         [inspect]\npath_suffixes = [\"/chat/completions\", \"/generate\"]\n\
         [[routes]]\nname = \"named\"\nprefix = \"/named\"\nupstream = \"http://a\"\n\
         dialect = \"anthropic_messages\"\n\
         [[routes]]\nname = \"plain\"\nprefix = \"/plain\"\nupstream = \"http://b\"\n\
         enforce = true\n",
    );
    let config = Config::from_layers(
        Some(path.clone()),
        EnvLayer::default(),
        RawConfig::default(),
    )
    .expect("valid");
    let decide = |route, path| config.inspect.decide(route, "POST", path);
    let named = decide("named", "/named/v1/generate");
    assert_eq!(named.dialect, Some(Dialect::Anthropic), "old label read");
    assert!(named.inspect);
    let plain = decide("plain", "/plain/v1/generate");
    assert_eq!(plain.dialect, None, "no dialect names /generate");
    assert!(plain.inspect && !plain.enforce, "{plain:?}");
    let by_path = decide("plain", "/plain/v1/chat/completions");
    assert_eq!(by_path.dialect, Some(Dialect::Chat));
    assert!(by_path.enforce);
    let default = decide("default", "/v1/chat/completions");
    assert_eq!(
        default.dialect,
        Some(Dialect::Responses),
        "the route's over the path's"
    );

    let config = Config::from_layers(
        Some(path.clone()),
        env(&[("TOOLTAP_DIALECT", "anthropic")]),
        RawConfig::default(),
    )
    .expect("valid");
    let default = config.inspect.decide("default", "POST", "/v1/generate");
    assert_eq!(default.dialect, Some(Dialect::Anthropic), "env beats file");
    let Command::Proxy(args) = Cli::try_parse_from(["tooltap", "proxy", "--dialect", "chat"])
        .expect("flags parse")
        .command
    else {
        panic!("proxy subcommand");
    };
    let config = Config::from_layers(
        Some(path.clone()),
        env(&[("TOOLTAP_DIALECT", "anthropic")]),
        args.into_layer().1,
    )
    .expect("valid");
    let default = config.inspect.decide("default", "POST", "/v1/generate");
    assert_eq!(default.dialect, Some(Dialect::Chat), "flag beats env");
}

/// MCP's GET streams and DELETEs are inspected (its conversation needs them) whatever
/// `inspect.methods` says, by path and by a route's `dialect = "mcp"`, `proxy --dialect mcp`
/// too; other dialects' GETs are not.
#[test]
fn mcp_exchanges_are_inspected_for_get_and_delete_too() {
    use tooltap::engine::Dialect;
    let path = temp_toml(
        "mcp",
        "[inspect]\npath_suffixes = [\"/mcp\", \"/chat/completions\", \"/tools\"]\n\
         [[routes]]\nname = \"tools\"\nprefix = \"/t\"\nupstream = \"http://a\"\n\
         dialect = \"mcp\"\n",
    );
    let config = Config::from_layers(
        Some(path.clone()),
        EnvLayer::default(),
        RawConfig::default(),
    )
    .expect("valid");
    for method in ["POST", "GET", "DELETE", "get"] {
        let decided = config
            .inspect
            .decide("default", method, "/servers/weather/mcp");
        assert_eq!(decided.dialect, Some(Dialect::Mcp));
        assert!(decided.inspect, "{method}");
        let routed = config.inspect.decide("tools", method, "/t/tools");
        assert_eq!(routed.dialect, Some(Dialect::Mcp));
        assert!(routed.inspect, "{method} on a dialect = \"mcp\" route");
    }
    assert!(!config.inspect.decide("default", "PUT", "/mcp").inspect);
    assert!(
        !config
            .inspect
            .decide("default", "GET", "/v1/chat/completions")
            .inspect,
        "only MCP's GETs"
    );
    let Command::Proxy(args) = Cli::try_parse_from(["tooltap", "proxy", "--dialect", "mcp"])
        .expect("flags parse")
        .command
    else {
        panic!("proxy subcommand");
    };
    let config = Config::from_layers(Some(path.clone()), EnvLayer::default(), args.into_layer().1)
        .expect("valid");
    let decided = config
        .inspect
        .decide("default", "DELETE", "/v1/chat/completions");
    assert_eq!(decided.dialect, Some(Dialect::Mcp));
    assert!(decided.inspect);
}

#[test]
fn unknown_dialects_are_refused_naming_the_key_and_the_dialects() {
    let path = temp_toml(
        "baddialect",
        "[[routes]]\nname = \"g\"\nprefix = \"/g\"\nupstream = \"http://g\"\n\
         dialect = \"cohere\"\n",
    );
    let error = Config::from_layers(
        Some(path.clone()),
        EnvLayer::default(),
        RawConfig::default(),
    )
    .expect_err("unknown dialect accepted");
    let message = error.to_string();
    for part in [
        "routes[0].dialect",
        "\"cohere\"",
        tooltap::engine::Dialect::NAMES,
        &path.display().to_string(),
    ] {
        assert!(message.contains(part), "{part}: {message}");
    }
    let error = Config::from_layers(
        None,
        env(&[("TOOLTAP_DIALECT", "chat-completions")]),
        RawConfig::default(),
    )
    .expect_err("unknown dialect accepted");
    let message = error.to_string();
    assert!(
        message.contains("TOOLTAP_DIALECT") && message.contains("--dialect"),
        "{message}"
    );
}
