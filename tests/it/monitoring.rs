//! The monitoring pack (config/monitoring/) run by a real Prometheus: `promtool` checks and
//! unit-tests the rules; then `prometheus` scrapes a running tooltap's admin listener every
//! second while violating and clean traffic goes through it, and the test asserts through
//! Prometheus's HTTP API that the series hold the expected values, that every Grafana panel's
//! PromQL evaluates, and that the error-severity alert fires. Needs Debian's `prometheus`
//! package (scripts/test installs it as root); without it these tests fail loudly.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::engine_support;
use crate::support::client::{exchange, request};
use crate::support::fixtures::fixture_upstream;
use crate::support::proxy;

fn pack() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("config/monitoring")
}

/// `name` on PATH, or a loud failure saying how to get it.
fn tool(name: &str) -> PathBuf {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {name}")])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|p| !p.is_empty());
    match found {
        Some(path) => PathBuf::from(path),
        None => panic!(
            "NO {name}: the monitoring tests need Debian's `prometheus` package (prometheus and \
             promtool). Install it: `apt-get install -y prometheus` (scripts/test does this as root)."
        ),
    }
}

#[test]
fn promtool_checks_and_unit_tests_the_rules() {
    let promtool = tool("promtool");
    let check = Command::new(&promtool)
        .args(["check", "rules", "tooltap.rules.yml"])
        .current_dir(pack())
        .output()
        .expect("promtool runs");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let test = Command::new(&promtool)
        .args(["test", "rules", "tooltap.rules.test.yml"])
        .current_dir(pack())
        .output()
        .expect("promtool runs");
    let out = String::from_utf8_lossy(&test.stdout);
    assert!(
        test.status.success() && out.contains("SUCCESS"),
        "{out}{}",
        String::from_utf8_lossy(&test.stderr)
    );
}

/// A `prometheus` server killed when dropped.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
    dir: PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr")
}

fn start_prometheus(target: SocketAddr) -> Prometheus {
    let binary = tool("prometheus");
    let dir = std::env::temp_dir().join(format!("tooltap-prometheus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let rules = pack().join("tooltap.rules.yml");
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\n\
         scrape_configs:\n  - job_name: tooltap\n    static_configs:\n      - targets: [\"{target}\"]\n",
        rules.display()
    );
    std::fs::write(dir.join("prometheus.yml"), config).expect("config");
    let addr = free_port();
    let child = Command::new(binary)
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus starts");
    Prometheus { child, addr, dir }
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn api(prometheus: &Prometheus, path: &str) -> Value {
    let collected = exchange(prometheus.addr, request(prometheus.addr, "GET", path, "")).await;
    serde_json::from_slice(&collected.body).unwrap_or(Value::Null)
}

async fn query(prometheus: &Prometheus, promql: &str) -> Value {
    api(
        prometheus,
        &format!("/api/v1/query?query={}", encode(promql)),
    )
    .await
}

/// The single value of an instant query, when it has exactly one sample.
async fn scalar(prometheus: &Prometheus, promql: &str) -> Option<f64> {
    let answer = query(prometheus, promql).await;
    let result = answer["data"]["result"].as_array()?;
    (result.len() == 1).then(|| result[0]["value"][1].as_str()?.parse().ok())?
}

/// Polls `check` every 250 ms until it holds or `limit` passes.
async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !check().await {
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn dashboard_queries(path: &Path) -> Vec<String> {
    let dashboard: Value =
        serde_json::from_slice(&std::fs::read(path).expect("dashboard")).expect("json");
    dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .flat_map(|panel| panel["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|target| target["expr"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_tooltap_evaluates_the_dashboard_and_fires_the_error_alert() {
    let fixtures: Vec<_> = engine_support::load_all()
        .into_iter()
        .filter(|f| f.name == "stream_id_changed" || f.name == "pair_parallel_sse")
        .collect();
    assert_eq!(fixtures.len(), 2);
    let upstream = fixture_upstream(&fixtures).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let admin = tooltap.admin_addr().expect("admin listener");
    let prometheus = start_prometheus(admin);
    eventually(Duration::from_secs(30), "prometheus listens", || async {
        tokio::net::TcpStream::connect(prometheus.addr)
            .await
            .is_ok()
    })
    .await;
    eventually(
        Duration::from_secs(30),
        "prometheus scrapes tooltap",
        || async { scalar(&prometheus, "up{job=\"tooltap\"}").await == Some(1.0) },
    )
    .await;

    // 3 violating streams (delta.id_changed, error) and 5 clean ones; one violation is scraped
    // before the other two so that the counter visibly grows (rates above zero).
    let send = |name: &'static str, times: usize| {
        let fixture = fixtures
            .iter()
            .find(|f| f.name == name)
            .expect("fixture")
            .clone();
        let addr = tooltap.local_addr();
        async move {
            for _ in 0..times {
                let body = String::from_utf8_lossy(&fixture.request).into_owned();
                let mut req = request(addr, "POST", "/v1/chat/completions", &body);
                req.headers_mut()
                    .insert("x-fixture", name.parse().expect("header"));
                let got = exchange(addr, req).await;
                assert_eq!(got.status, 200);
            }
        }
    };
    send("stream_id_changed", 1).await;
    send("pair_parallel_sse", 5).await;
    eventually(
        Duration::from_secs(30),
        "the first violation scraped",
        || async { scalar(&prometheus, "sum(tooltap_violations_total)").await == Some(1.0) },
    )
    .await;
    // A second scrape sees it still at one, so the next violations are a visible increase.
    eventually(
        Duration::from_secs(30),
        "two scrapes of the first violation",
        || async {
            scalar(
                &prometheus,
                "count_over_time(tooltap_violations_total{rule=\"delta.id_changed\"}[1m])",
            )
            .await
            .is_some_and(|samples| samples >= 2.0)
        },
    )
    .await;
    send("stream_id_changed", 2).await;

    let wanted = [
        (
            "sum(tooltap_violations_total{rule=\"delta.id_changed\",severity=\"error\"})",
            3.0,
        ),
        ("sum(tooltap_violations_total)", 3.0),
        (
            "sum(tooltap_exchanges_inspected_total{stream=\"true\"})",
            8.0,
        ),
        ("sum(tooltap_requests_total{status=\"200\"})", 8.0),
        ("sum(tooltap_upstream_ttfb_seconds_count)", 8.0),
        ("sum(tooltap_request_overhead_seconds_count)", 8.0),
    ];
    for (promql, value) in wanted {
        eventually(Duration::from_secs(30), promql, || async {
            scalar(&prometheus, promql).await == Some(value)
        })
        .await;
    }
    // Recording rules produce series.
    eventually(Duration::from_secs(30), "recording rule", || async {
        scalar(
            &prometheus,
            "tooltap:violations:rate5m{rule=\"delta.id_changed\"}",
        )
        .await
        .is_some_and(|v| v > 0.0)
    })
    .await;

    // Every dashboard panel's PromQL evaluates (Grafana's variables filled in).
    let queries = dashboard_queries(&pack().join("grafana-dashboard.json"));
    assert!(queries.len() >= 12, "{queries:?}");
    for raw in &queries {
        let promql = raw
            .replace("$__rate_interval", "1m")
            .replace("$route", ".*");
        let answer = query(&prometheus, &promql).await;
        assert_eq!(answer["status"], "success", "{promql}: {answer}");
    }
    let violations_by_rule = query(
        &prometheus,
        &queries[0]
            .replace("$__rate_interval", "1m")
            .replace("$route", ".*"),
    )
    .await;
    assert!(
        violations_by_rule["data"]["result"]
            .to_string()
            .contains("delta.id_changed"),
        "{violations_by_rule}"
    );

    // The error-severity alert fires for that rule and route.
    eventually(
        Duration::from_secs(30),
        "TooltapErrorViolations firing",
        || async {
            let alerts = api(&prometheus, "/api/v1/alerts").await;
            alerts["data"]["alerts"].as_array().is_some_and(|list| {
                list.iter().any(|a| {
                    a["labels"]["alertname"] == "TooltapErrorViolations"
                        && a["labels"]["rule"] == "delta.id_changed"
                        && a["labels"]["route"] == "default"
                        && a["state"] == "firing"
                })
            })
        },
    )
    .await;
    let alerts = api(&prometheus, "/api/v1/alerts").await;
    let firing: Vec<&str> = alerts["data"]["alerts"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter(|a| a["state"] == "firing")
                .filter_map(|a| a["labels"]["alertname"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        firing,
        vec!["TooltapErrorViolations"],
        "only the error alert fires on this traffic"
    );
    drop(prometheus);
    let _ = tooltap.shutdown().await;
}
