//! Starting tooltap in-process for a test: a config on `127.0.0.1:0` aimed at a test upstream,
//! built through the same `RawConfig` → `Config` validation the binary uses; and `tooltap
//! replay` of what it recorded.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::within;
use tooltap::config::{Config, HumanDuration, RawConfig, RawRoute};
use tooltap::proxy::server::RunningProxy;
use tooltap::record::RecordMode;
use tooltap::replay::ReplaySettings;
use tooltap::replay::server::RunningReplay;

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
        dialect: None,
    }
}

pub async fn start(raw: RawConfig) -> RunningProxy {
    let config = Config::validate(raw, None).expect("valid test config");
    RunningProxy::start(config).await.expect("proxy starts")
}

/// tooltap before `upstream`, writing violations to `violations` and recording every exchange
/// under `recordings`.
pub async fn start_recording(upstream: &str, violations: &Path, recordings: &Path) -> RunningProxy {
    let mut raw = raw_config(upstream);
    raw.inspect.violations = Some(violations.to_path_buf());
    raw.record.mode = Some(RecordMode::All);
    raw.record.dir = Some(recordings.to_path_buf());
    start(raw).await
}

/// tooltap before `upstream` in enforce mode: a response that breaks an error-severity rule
/// reaches the client as the dialect's error.
pub async fn start_enforcing(upstream: &str) -> RunningProxy {
    let mut raw = raw_config(upstream);
    raw.inspect.enforce = Some(true);
    start(raw).await
}

/// `tooltap replay` of `recordings` on an ephemeral loopback port, its violations (if any) to
/// `violations`.
pub async fn start_replay(recordings: PathBuf, violations: Option<PathBuf>) -> RunningReplay {
    let mut settings = ReplaySettings::new(recordings);
    settings.listen = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    settings.violations = violations;
    within(Duration::from_secs(20), RunningReplay::start(&settings))
        .await
        .expect("replay starts")
}
