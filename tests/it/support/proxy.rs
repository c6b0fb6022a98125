//! Starting tooltap in-process for a test: a config on `127.0.0.1:0` aimed at a test upstream,
//! built through the same `RawConfig` → `Config` validation the binary uses.

use std::time::Duration;

use tooltap::config::{Config, HumanDuration, RawConfig, RawRoute};
use tooltap::proxy::server::RunningProxy;

/// Raw config listening on an ephemeral port with `upstream` as the default route.
pub fn raw_config(upstream: &str) -> RawConfig {
    let mut raw = RawConfig::default();
    raw.proxy.listen = Some("127.0.0.1:0".parse().expect("addr"));
    raw.proxy.upstream = Some(upstream.to_owned());
    raw.timeouts.first_byte = Some(HumanDuration(Duration::from_secs(5)));
    raw.shutdown.grace = Some(HumanDuration(Duration::from_secs(5)));
    // Never a fixed port, never a file in the working tree: tests that want them set their own.
    raw.admin.listen = Some("127.0.0.1:0".into());
    raw.inspect.violations = Some("off".into());
    raw.record.mode = Some(tooltap::record::RecordMode::Off);
    raw
}

pub fn route(name: &str, prefix: &str, upstream: &str) -> RawRoute {
    RawRoute {
        inject: None,
        name: name.into(),
        prefix: prefix.into(),
        upstream: upstream.into(),
        inspect: None,
        enforce: None,
    }
}

pub async fn start(raw: RawConfig) -> RunningProxy {
    let config = Config::validate(raw, None).expect("valid test config");
    RunningProxy::start(config).await.expect("proxy starts")
}
