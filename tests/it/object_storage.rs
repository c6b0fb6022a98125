//! Recordings in object storage against a real S3 server: moto's (`moto[server]`, pinned in
//! tests/clients/python/requirements.txt), started by tests/clients/python/moto_s3.py. Two real
//! tooltap replicas in front of one loopback upstream record to one bucket; `tooltap check` and
//! `tooltap replay` read it back; the server is stopped mid-run and started again. A missing
//! moto fails the test with its name: nothing here is skipped.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use object_store::ObjectStore;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::engine_support::{self, Fixture};
use crate::support::binary::{self, Running};
use crate::support::client::{exchange, request};
use crate::support::clients::{python, python_script};
use crate::support::fixtures::{fixture_request, fixture_upstream, violations_by_exchange};
use crate::support::temp::jsonl_under;
use crate::support::upstream::Upstream;
use crate::support::{TempDir, within};
use tooltap::record::store::{S3Settings, StoreUrl};

const BUCKET: &str = "tooltap-rec";
const PREFIX: &str = "staging";
/// A violating and a clean exchange, alternately.
const FIXTURES: [&str; 2] = ["buffered_arguments_not_json", "buffered_arguments_object"];
/// An exchange through a replica takes well under this, store up or down.
const NO_DELAY: Duration = Duration::from_secs(2);

/// A running moto server with one bucket.
struct Moto {
    child: tokio::process::Child,
    port: u16,
}

impl Moto {
    /// Starts moto on `port` (0: one the system picks) and waits for its bucket.
    async fn start(dir: &Path, port: u16) -> Moto {
        let log = dir.join(format!("moto-{port}.log"));
        let stderr = std::fs::File::create(&log).expect("moto log");
        let mut child = tokio::process::Command::new(python())
            .arg(python_script("moto_s3.py"))
            .arg(BUCKET)
            .arg(port.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("python starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = within(Duration::from_secs(60), lines.next_line()).await;
        let port = line
            .ok()
            .flatten()
            .and_then(|line| line.trim().parse().ok());
        let Some(port) = port else {
            panic!(
                "moto_server (moto[server] from tests/clients/python/requirements.txt) did not \
                 start: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        };
        Moto { child, port }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    async fn stop(&mut self) {
        self.child.kill().await.expect("kill moto");
    }

    fn envs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
        ]
    }

    /// The object keys under the prefix.
    async fn keys(&self) -> Vec<String> {
        let url = StoreUrl {
            bucket: BUCKET.into(),
            prefix: PREFIX.into(),
        };
        let store = tooltap::record::store::open(&url, &self.settings()).expect("store");
        let prefix = url.prefix_path();
        let listed: Vec<_> = within(
            Duration::from_secs(20),
            store.list(prefix.as_ref()).collect::<Vec<_>>(),
        )
        .await;
        listed
            .into_iter()
            .map(|meta| meta.expect("listed").location.to_string())
            .collect()
    }

    /// A create-only put (as the uploader makes) on an existing key fails on this server, and
    /// the object is unchanged: what makes "never overwritten" true of the store itself.
    async fn refuses_to_overwrite(&self, key: &str) {
        use object_store::{PutMode, PutOptions, PutPayload};
        let url = StoreUrl {
            bucket: BUCKET.into(),
            prefix: String::new(),
        };
        let store = tooltap::record::store::open(&url, &self.settings()).expect("store");
        let key = object_store::path::Path::from(key);
        let before = read(&*store, &key).await;
        let options = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let put = store
            .put_opts(&key, PutPayload::from_static(b"overwritten"), options)
            .await;
        assert!(
            matches!(put, Err(object_store::Error::AlreadyExists { .. })),
            "{put:?}"
        );
        let after = read(&*store, &key).await;
        assert_eq!(before, after);
    }

    fn settings(&self) -> S3Settings {
        S3Settings {
            endpoint: Some(self.endpoint()),
            region: Some("us-east-1".into()),
            access_key_id: Some("testing".into()),
            secret_access_key: Some("testing".into()),
            session_token: None,
        }
    }

    /// Waits until the prefix holds `count` objects; returns their keys.
    async fn wait_for(&self, count: usize, limit: Duration) -> Vec<String> {
        let deadline = Instant::now() + limit;
        loop {
            let keys = self.keys().await;
            if keys.len() >= count || Instant::now() > deadline {
                return keys;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn location() -> String {
    format!("s3://{BUCKET}/{PREFIX}")
}

/// A replica's config file: the store through `[record.s3]` (with `extra` keys), its own spool.
/// The folder's pruning limits are set as low as they go: with a store they must not apply.
fn replica_config(dir: &Path, name: &str, endpoint: &str, extra: &str) -> (PathBuf, PathBuf) {
    let spool = dir.join(format!("spool-{name}"));
    let config = dir.join(format!("{name}.toml"));
    let text = format!(
        "[record]\nmax_files = 1\nmax_total_bytes = 1\n[record.s3]\nendpoint = \"{}\"\nregion = \"us-east-1\"\naccess_key_id = \"testing\"\n\
         secret_access_key = \"testing\"\nspool = \"{}\"\n{extra}",
        endpoint,
        spool.display()
    );
    std::fs::write(&config, text).expect("config");
    (config, spool)
}

/// A replica whose live verdicts go to `<config>.violations.jsonl`.
async fn start_replica(config: &Path, upstream: &str, layout: &str) -> Running {
    let location = location();
    let violations = config.with_extension("violations.jsonl");
    let args: Vec<&OsStr> = vec![
        "--config".as_ref(),
        config.as_os_str(),
        "--upstream".as_ref(),
        upstream.as_ref(),
        "--record".as_ref(),
        "all".as_ref(),
        "--record-layout".as_ref(),
        layout.as_ref(),
        "--recordings".as_ref(),
        location.as_ref(),
        "--violations".as_ref(),
        violations.as_os_str(),
    ];
    // Each exchange's summary line off: nothing reads the replica's log pipe until it stops,
    // and a full pipe would block its logging (and so its traffic).
    binary::start_proxy(&args, "info,tooltap::inspect=error").await
}

/// Sends `count` exchanges through `replica` (the fixtures alternately); asserts each is
/// answered as the upstream answered, within [`NO_DELAY`]; returns their ids and the slowest.
async fn send(replica: &Running, fixtures: &[Fixture], count: usize) -> (Vec<String>, Duration) {
    let mut ids = Vec::new();
    let mut slowest = Duration::ZERO;
    for n in 0..count {
        let fixture = &fixtures[n % fixtures.len()];
        let began = Instant::now();
        let got = within(
            NO_DELAY,
            exchange(replica.addr, fixture_request(replica.addr, fixture)),
        )
        .await;
        slowest = slowest.max(began.elapsed());
        assert_eq!(got.status, 200);
        assert_eq!(got.body, fixture.body, "{}", fixture.name);
        let id = got.headers["x-tooltap-exchange"].to_str().expect("id");
        ids.push(id.to_string());
    }
    (ids, slowest)
}

/// The exchange id of each key (`<prefix>/<route>/<date>/<id>.jsonl`), counted.
fn ids_in(keys: &[String]) -> BTreeMap<String, usize> {
    let mut ids = BTreeMap::new();
    for key in keys {
        let name = key.rsplit('/').next().unwrap_or_default();
        let id = name.strip_suffix(".jsonl").unwrap_or(name).to_string();
        *ids.entry(id).or_insert(0) += 1;
    }
    ids
}

fn counted(ids: &[String]) -> BTreeMap<String, usize> {
    ids_in(
        &ids.iter()
            .map(|id| format!("{id}.jsonl"))
            .collect::<Vec<_>>(),
    )
}

async fn uploads(replica: &Running, outcome: &str) -> u64 {
    let admin = replica.admin.expect("admin listener");
    let got = exchange(admin, request(admin, "GET", "/metrics", "")).await;
    let text = String::from_utf8_lossy(&got.body).into_owned();
    crate::support::metrics::metric_sum(
        &text,
        "tooltap_recording_uploads_total",
        &[&format!("outcome=\"{outcome}\"")],
    )
}

/// `tooltap check --format json s3://…`: each exchange's id and its violations' rule ids.
fn check(moto: &Moto) -> Vec<(String, Vec<String>)> {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tooltap"))
        .args(["check", "--format", "json"])
        .arg(location())
        .envs(moto.envs())
        .output()
        .expect("tooltap check runs");
    // 1 says a violation was found: the verdicts are compared below.
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON report");
    report["exchanges"]
        .as_array()
        .expect("exchanges")
        .iter()
        .map(|e| {
            let violations: Vec<serde_json::Value> =
                e["violations"].as_array().cloned().unwrap_or_default();
            (
                e["id"].as_str().expect("id").to_string(),
                rules(&violations),
            )
        })
        .collect()
}

/// Rule ids, sorted.
fn rules(violations: &[serde_json::Value]) -> Vec<String> {
    let mut rules: Vec<String> = violations
        .iter()
        .map(|v| v["rule"].as_str().unwrap_or_default().to_string())
        .collect();
    rules.sort();
    rules
}

/// The live inspectors' verdicts: each exchange's rule ids from the replicas' violations files,
/// once `exchanges` exchanges are in them (the files are written by a thread of their own).
async fn live_verdicts(configs: &[&Path], exchanges: usize) -> BTreeMap<String, Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut found = BTreeMap::new();
        for config in configs {
            let file = config.with_extension("violations.jsonl");
            for (id, lines) in violations_by_exchange(&file) {
                found.insert(id, rules(&lines));
            }
        }
        if found.len() >= exchanges || Instant::now() > deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One object's bytes.
async fn read(store: &dyn ObjectStore, key: &object_store::path::Path) -> bytes::Bytes {
    use object_store::ObjectStoreExt;
    let got = store.get(key).await.expect("get");
    got.bytes().await.expect("bytes")
}

/// The two fixtures, and a loopback upstream answering each.
async fn fixtures_and_upstream() -> (Vec<Fixture>, Upstream) {
    let fixtures: Vec<Fixture> = FIXTURES
        .iter()
        .map(|n| engine_support::fixture(n))
        .collect();
    let upstream = fixture_upstream(&fixtures).await;
    (fixtures, upstream)
}

/// [`send`] from `clients` concurrent clients, `count / clients` exchanges each.
async fn send_from(
    replica: &Running,
    fixtures: &[Fixture],
    count: usize,
    clients: usize,
) -> (Vec<String>, Duration) {
    let sent = futures_util::future::join_all(
        (0..clients).map(|_| send(replica, fixtures, count / clients)),
    )
    .await;
    let slowest = sent.iter().map(|(_, slowest)| *slowest).max();
    let ids = sent.into_iter().flat_map(|(ids, _)| ids).collect();
    (ids, slowest.unwrap_or_default())
}

/// A process's peak and current resident memory (`VmHWM`, `VmRSS`), in KiB.
fn memory_kib(replica: &Running) -> (u64, u64) {
    let pid = replica.child.id().unwrap_or_default();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or_default()
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// `(exchanges per replica before the stop, while it is down, after the restart)`, sent by
/// `clients` concurrent clients per replica before the stop.
async fn two_replicas_share_one_bucket(before: usize, down: usize, after: usize, clients: usize) {
    let dir = TempDir::new("s3");
    let (fixtures, upstream) = fixtures_and_upstream().await;
    let mut moto = Moto::start(dir.path(), 0).await;
    let (config_a, spool_a) = replica_config(dir.path(), "a", &moto.endpoint(), "");
    let (config_b, spool_b) = replica_config(dir.path(), "b", &moto.endpoint(), "");
    let url = upstream.url();
    let (a, b) = tokio::join!(
        start_replica(&config_a, &url, "files"),
        start_replica(&config_b, &url, "files")
    );
    let began = Instant::now();
    let ((ids_a, slow_a), (ids_b, slow_b)) = tokio::join!(
        send_from(&a, &fixtures, before, clients),
        send_from(&b, &fixtures, before, clients)
    );
    let answered = began.elapsed();
    let mut expected = ids_a.clone();
    expected.extend(ids_b.iter().cloned());
    let keys = moto.wait_for(2 * before, Duration::from_secs(60)).await;
    eprintln!(
        "{} exchanges through two replicas ({clients} clients each) answered in {answered:?}, \
         stored in {:?} (slowest exchange {:?}); replica memory (peak, now) KiB: {:?} {:?}",
        2 * before,
        began.elapsed(),
        slow_a.max(slow_b),
        memory_kib(&a),
        memory_kib(&b)
    );
    // Also: the folder's max_files = 1 pruned nothing. Pruning the store is a bucket
    // lifecycle rule's job (docs/deploy.md), not tooltap's.
    assert_eq!(ids_in(&keys), counted(&expected), "every recording once");
    assert_eq!(
        uploads(&a, "renamed").await + uploads(&b, "renamed").await,
        0
    );
    moto.refuses_to_overwrite(&keys[0]).await;

    // `check` on the bucket judges as the live inspectors did.
    let checked = check(&moto);
    let checked_ids: Vec<String> = checked.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(counted(&checked_ids), counted(&expected));
    let judged: BTreeMap<String, Vec<String>> = checked
        .into_iter()
        .filter(|(_, rules)| !rules.is_empty())
        .collect();
    assert!(
        judged.len() >= before,
        "at least the violating fixture's exchanges"
    );
    let live = live_verdicts(&[&config_a, &config_b], judged.len()).await;
    assert_eq!(
        judged, live,
        "check on the bucket and the live inspectors agree"
    );

    // `replay` serves the bucket's recordings.
    let envs = moto.envs();
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let location = location();
    let mut replay =
        binary::start_replay_with(&["--recordings".as_ref(), location.as_ref()], &envs, "info")
            .await;
    // Both fixtures' requests are the same (the upstream tells them apart by a header replay
    // does not match on): each is answered with one of the recorded bodies.
    for fixture in &fixtures {
        let got = exchange(replay.addr, fixture_request(replay.addr, fixture)).await;
        assert_eq!(got.status, 200, "{}", fixture.name);
        assert!(
            fixtures.iter().any(|recorded| got.body == recorded.body),
            "{}: {:?}",
            fixture.name,
            got.body
        );
    }
    replay.stop_and_drain().await;

    // The store goes down: clients see nothing; the recordings wait in each spool.
    let port = moto.port;
    moto.stop().await;
    let ((down_a, slow_a), (down_b, slow_b)) =
        tokio::join!(send(&a, &fixtures, down), send(&b, &fixtures, down));
    eprintln!(
        "slowest exchange with the store down: {:?}",
        slow_a.max(slow_b)
    );
    for (replica, spool, ids) in [(&a, &spool_a, &down_a), (&b, &spool_b, &down_b)] {
        let deadline = Instant::now() + Duration::from_secs(10);
        while jsonl_under(spool).len() < ids.len() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(
            jsonl_under(spool).len(),
            ids.len(),
            "spilled to {}",
            spool.display()
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while uploads(replica, "failed").await == 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            uploads(replica, "failed").await >= 1,
            "the failed attempt is counted"
        );
    }

    // Back up (empty, as moto keeps nothing): the spooled recordings and new ones arrive.
    let moto = Moto::start(dir.path(), port).await;
    let ((up_a, _), (up_b, _)) =
        tokio::join!(send(&a, &fixtures, after), send(&b, &fixtures, after));
    let mut expected: Vec<String> = Vec::new();
    for ids in [&down_a, &down_b, &up_a, &up_b] {
        expected.extend(ids.iter().cloned());
    }
    let keys = moto.wait_for(expected.len(), Duration::from_secs(45)).await;
    assert_eq!(
        ids_in(&keys),
        counted(&expected),
        "spooled and new, each once"
    );
    // A spooled file is deleted once its upload's answer is back, a moment after the object is
    // in the bucket: the spools empty soon after the last key appears, not with it.
    let spools_empty = || jsonl_under(&spool_a).is_empty() && jsonl_under(&spool_b).is_empty();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !spools_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(spools_empty(), "every uploaded recording left its spool");
    let (mut a, mut b) = (a, b);
    a.stop_and_drain().await;
    b.stop_and_drain().await;
}

#[tokio::test]
async fn two_replicas_record_to_one_bucket_and_survive_the_store_going_down() {
    two_replicas_share_one_bucket(24, 5, 5, 2).await;
}

/// The acceptance figure: 1,000 exchanges through each replica.
#[tokio::test]
#[ignore = "about a minute: run with --ignored"]
async fn two_replicas_record_a_thousand_exchanges_each_to_one_bucket() {
    two_replicas_share_one_bucket(1000, 50, 50, 4).await;
}

/// The segments layout stores whole segment objects: closed by age, or at shutdown.
#[tokio::test]
async fn segments_are_stored_as_whole_objects_by_the_time_the_replica_stops() {
    let dir = TempDir::new("s3seg");
    let (fixtures, upstream) = fixtures_and_upstream().await;
    let moto = Moto::start(dir.path(), 0).await;
    let (config, spool) = replica_config(dir.path(), "seg", &moto.endpoint(), "");
    let mut replica = start_replica(&config, &upstream.url(), "segments").await;
    let (ids, _) = send(&replica, &fixtures, 20).await;
    replica.stop_and_drain().await;
    let keys = moto.keys().await;
    assert!(!keys.is_empty());
    assert!(keys.iter().all(|key| key.contains("/segment-")), "{keys:?}");
    assert!(
        jsonl_under(&spool).is_empty(),
        "uploaded and deleted at shutdown"
    );
    let checked = check(&moto);
    let checked_ids: Vec<String> = checked.into_iter().map(|(id, _)| id).collect();
    assert_eq!(counted(&checked_ids), counted(&ids));
}

/// With the store unreachable, the spool keeps within `record.s3.max_spool_bytes`: the oldest
/// waiting recordings are deleted and counted `dropped`; every client is answered at once.
#[tokio::test]
async fn the_spool_stays_within_its_bound_while_the_store_is_down() {
    let dir = TempDir::new("s3spool");
    let (fixtures, upstream) = fixtures_and_upstream().await;
    // A port nothing listens on: every upload is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let bound = 20_000;
    let extra = format!("max_spool_bytes = {bound}\nmax_queued_bytes = 1\n");
    let (config, spool) = replica_config(dir.path(), "dead", &dead, &extra);
    let mut replica = start_replica(&config, &upstream.url(), "files").await;
    let (_, slowest) = send(&replica, &fixtures, 60).await;
    assert!(slowest < NO_DELAY);
    let size = |spool: &Path| -> u64 {
        jsonl_under(spool)
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum()
    };
    let before = size(&spool);
    assert!(before > bound, "the traffic outgrew the bound: {before}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while size(&spool) > bound && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let after = size(&spool);
    eprintln!("spool: {before} bytes after the traffic, {after} one rescan later (bound {bound})");
    assert!(after <= bound, "{after} bytes spooled, bound {bound}");
    assert!(uploads(&replica, "dropped").await >= 1);
    assert!(
        uploads(&replica, "spilled").await >= 1,
        "max_queued_bytes = 1 takes one file at a time: the others are spilled"
    );
    replica.stop_and_drain().await;
}
