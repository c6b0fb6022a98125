//! Support for the report's browser tests: writing recordings, building the page in-process
//! and loading it in a real headless Chromium.
//!
//! Chromium is required: when it cannot be found the tests fail with a message saying how to
//! install it (scripts/test installs Debian's `chromium` when run as root).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::engine_support::sse_head;
use crate::support::TempDir;
use serde_json::{Value, json};
use tooltap::engine::{Completeness, ResponseHead};
use tooltap::record::format::{RequestPart, ResponsePart};
use tooltap::record::{EndLine, FrameData, FrameLine, Line, Meta, Outcome, RecordedBody};

/// The browser binary: `TOOLTAP_CHROMIUM`, else `chromium` or `chromium-browser` on PATH.
pub fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("TOOLTAP_CHROMIUM") {
        return PathBuf::from(path);
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        if let Some(path) = found.filter(|p| !p.is_empty()) {
            return PathBuf::from(path);
        }
    }
    panic!(
        "NO BROWSER: the report tests need a headless Chromium and none was found \
         (tried $TOOLTAP_CHROMIUM, chromium, chromium-browser, google-chrome). Install it: \
         `apt-get install -y chromium` (scripts/test does this when run as root)."
    );
}

/// Loads `file#hash` in headless Chromium and returns the DOM after scripts ran.
pub fn dump_dom(file: &Path, hash: &str) -> String {
    let url = format!("file://{}{hash}", file.display());
    let out = run_chromium(&["--virtual-time-budget=10000", "--dump-dom", &url]);
    dom_of(&url, &out)
}

/// [`dump_dom`] with the window `size` wide and high (`"1400,950"`).
pub fn dump_dom_at(file: &Path, hash: &str, size: &str) -> String {
    let url = format!("file://{}{hash}", file.display());
    let window = format!("--window-size={size}");
    let out = run_chromium(&["--virtual-time-budget=10000", &window, "--dump-dom", &url]);
    dom_of(&url, &out)
}

fn dom_of(url: &str, out: &str) -> String {
    assert!(
        out.contains("</html>"),
        "chromium printed no DOM for {url}: {out}"
    );
    without_scripts(out)
}

/// The DOM minus `<script>` elements (their source and data would match the assertions).
fn without_scripts(dom: &str) -> String {
    let mut out = String::with_capacity(dom.len());
    let mut rest = dom;
    while let Some(start) = rest.find("<script") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</script>") {
            Some(end) => rest = &rest[start + end + "</script>".len()..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}

/// Screenshot of `file#hash` at the given window size.
pub fn screenshot(file: &Path, hash: &str, png: &Path, size: &str) {
    let url = format!("file://{}{hash}", file.display());
    let shot = format!("--screenshot={}", png.display());
    let window = format!("--window-size={size}");
    run_chromium(&[
        "--virtual-time-budget=10000",
        "--hide-scrollbars",
        &shot,
        &window,
        &url,
    ]);
    assert!(png.exists(), "no screenshot written to {}", png.display());
}

fn run_chromium(args: &[&str]) -> String {
    let profile = TempDir::new("chromium-profile");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    // Read stdout while chromium runs: a DOM larger than the pipe buffer would block it.
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        out
    });
    let started = Instant::now();
    loop {
        match child.try_wait().expect("chromium waitable") {
            Some(_) => break,
            None if started.elapsed() > Duration::from_secs(90) => {
                let _ = child.kill();
                panic!("chromium did not finish within 90 s: {args:?}");
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    let out = reader.join().unwrap_or_default();
    let _ = std::fs::remove_dir_all(&profile);
    out
}

/// Builds the page for `paths` in-process and writes it to `out`.
pub fn build(paths: &[PathBuf], out: &Path) -> tooltap::report::ReportData {
    let args = tooltap::report::ReportArgs {
        paths: paths.to_vec(),
        output: out.to_path_buf(),
        severity: None,
        docs_base: String::new(),
        max_exchanges: 20_000,
        max_shown_bytes: tooltap::report::bound::DEFAULT_MAX_SHOWN_BYTES,
        max_page_bytes: tooltap::report::bound::DEFAULT_MAX_PAGE_BYTES,
    };
    let data = tooltap::report::collect(&args);
    let page = tooltap::report::render(&data).expect("renders");
    std::fs::write(out, page).expect("page written");
    data
}

/// What a recording file holds, for [`write_recording`].
pub struct Rec<'a> {
    pub id: &'a str,
    pub started: &'a str,
    pub request: &'a [u8],
    pub head: ResponseHead,
    pub frames: Vec<&'a [u8]>,
    /// `None`: the file ends before its end line (tooltap crashed mid-exchange).
    pub end: Option<(Outcome, u64)>,
}

/// Writes a recording in the on-disk format `tooltap proxy` writes.
pub fn write_recording(path: &Path, rec: &Rec<'_>) {
    write_recording_for(path, rec, "/v1/chat/completions");
}

/// [`write_recording`] for a request to `request_path`.
pub fn write_recording_for(path: &Path, rec: &Rec<'_>, request_path: &str) {
    let json = vec![("content-type".into(), "application/json".into())];
    write_recording_as(path, rec, request_path, "POST", json);
}

/// [`write_recording_for`] with the request's method and headers as given (an MCP fixture's
/// GET or DELETE, its session and version headers); the response keeps `rec.head`'s headers.
pub fn write_recording_as(
    path: &Path,
    rec: &Rec<'_>,
    request_path: &str,
    method: &str,
    request_headers: Vec<(String, String)>,
) {
    let mut headers = Vec::new();
    if let Some(t) = &rec.head.content_type {
        headers.push(("content-type".to_string(), t.clone()));
    }
    if let Some(e) = &rec.head.content_encoding {
        headers.push(("content-encoding".to_string(), e.clone()));
    }
    headers.extend(rec.head.headers.iter().cloned());
    let meta = Meta {
        v: tooltap::record::VERSION,
        id: rec.id.to_string(),
        started: rec.started.to_string(),
        route: "default".into(),
        upstream: "http://127.0.0.1:1".into(),
        method: method.into(),
        path: request_path.into(),
        dialect: None,
        query: None,
        request: RequestPart {
            headers: request_headers,
            body: RecordedBody::from_bytes(rec.request),
        },
        response: ResponsePart {
            status: rec.head.status,
            headers,
        },
        redacted: Vec::new(),
        injected: Vec::new(),
        credential: None,
    };
    let mut lines = vec![Line::Exchange(Box::new(meta))];
    for (seq, bytes) in rec.frames.iter().enumerate() {
        lines.push(Line::Frame(FrameLine {
            seq: seq as u64,
            t_us: 1_000 + seq as u64 * 20_000,
            data: FrameData::from_bytes(bytes),
        }));
    }
    if let Some((outcome, dropped)) = rec.end {
        lines.push(Line::End(Box::new(EndLine {
            outcome,
            t_us: 1_000 + rec.frames.len() as u64 * 20_000,
            dropped_frames: dropped,
            frames: rec.frames.len() as u64,
            bytes: rec.frames.iter().map(|f| f.len() as u64).sum(),
            completeness: Completeness::Complete,
            violations: Vec::new(),
            enforced: None,
        })));
    }
    let mut text = String::new();
    for line in &lines {
        text.push_str(&serde_json::to_string(line).expect("serializes"));
        text.push('\n');
    }
    std::fs::write(path, text).expect("recording written");
}

/// Every element's opening tag that contains all `needles`.
pub fn tags_with<'a>(dom: &'a str, needles: &[&str]) -> Vec<&'a str> {
    dom.split('<')
        .filter_map(|part| part.split('>').next())
        .filter(|tag| needles.iter().all(|n| tag.contains(n)))
        .collect()
}

/// The page ran its script to the end and logged no script error.
pub fn assert_clean(dom: &str) {
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script did not finish"
    );
    assert!(
        !dom.contains("class=\"script-error\""),
        "script error in the page: {}",
        errors_of(dom)
    );
    assert!(
        tags_with(dom, &["id=\"errors\"", "hidden"]).len() == 1,
        "error box shown"
    );
}

fn errors_of(dom: &str) -> String {
    dom.split("class=\"script-error\"")
        .skip(1)
        .map(|s| s.chars().take(300).collect::<String>())
        .collect()
}

/// A small chat request declaring `get_weather`.
pub fn weather_request(stream: bool) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"model":"gpt-test","stream":stream,"tool_choice":"required",
        "messages":[{"role":"user","content":"weather?"}],
        "tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
            "properties":{"city":{"type":"string"}},"required":["city"]}}}]}),
    )
    .expect("json")
}

/// One SSE `data:` event of a chat stream with the given delta.
/// The chunk that opens call `call_1` to `get_weather`, its arguments still empty.
pub fn open_call() -> Vec<u8> {
    chunk(
        json!({"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}),
        None,
    )
}

pub fn chunk(delta: Value, finish: Option<&str>) -> Vec<u8> {
    let doc = json!({"id":"c","object":"chat.completion.chunk","model":"gpt-test",
        "choices":[{"index":0,"delta":delta,"finish_reason":finish}]});
    format!("data: {doc}\n\n").into_bytes()
}

pub fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("recordings/examples")
}

/// The section of the DOM that shows exchange `id` (in a multi-exchange view).
pub fn section<'a>(dom: &'a str, id: &str) -> &'a str {
    let marker = format!("class=\"exchange-detail\" data-id=\"{id}\"");
    let start = dom
        .find(&marker)
        .unwrap_or_else(|| panic!("no section for {id}"));
    let rest = &dom[start + marker.len()..];
    let end = rest.find("class=\"exchange-detail\"").unwrap_or(rest.len());
    &rest[..end]
}

pub fn page_text(page: &std::path::Path) -> String {
    std::fs::read_to_string(page).expect("page")
}

pub fn attr<'a>(dom: &'a str, name: &str) -> &'a str {
    let at = dom
        .find(&format!("{name}=\""))
        .unwrap_or_else(|| panic!("no {name}"));
    let rest = &dom[at + name.len() + 2..];
    &rest[..rest.find('"').unwrap_or(0)]
}

/// `n` small streamed exchanges (one call, four frames), every tenth with unparseable
/// arguments, started one second apart.
pub fn write_small_exchanges(recs: &Path, n: u32) {
    let request = weather_request(true);
    let sse = sse_head();
    let open = open_call();
    let args = chunk(
        json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Oslo\"}"}}]}),
        None,
    );
    let bad = chunk(
        json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}),
        None,
    );
    let finish = chunk(json!({}), Some("tool_calls"));
    for n in 0..n {
        let id = format!("x{n:05}");
        let started = format!(
            "2026-12-02T{:02}:{:02}:{:02}Z",
            n / 3600 % 24,
            n / 60 % 60,
            n % 60
        );
        let middle: &[u8] = if n % 10 == 0 { &bad } else { &args };
        write_recording(
            &recs.join(format!("{id}.jsonl")),
            &Rec {
                id: &id,
                started: &started,
                request: &request,
                head: sse.clone(),
                frames: vec![&open, middle, &finish, b"data: [DONE]\n\n"],
                end: Some((Outcome::Complete, 0)),
            },
        );
    }
}

/// Every engine fixture written as a recording into `recs`; returns the fixtures.
pub fn write_fixtures(recs: &Path) -> Vec<crate::engine_support::Fixture> {
    let fixtures = crate::engine_support::load_all();
    for fixture in &fixtures {
        let frames = crate::engine_support::natural_frames(fixture);
        let mut request_headers = fixture.request_headers.clone();
        if request_headers.is_empty() {
            request_headers.push(("content-type".into(), "application/json".into()));
        }
        write_recording_as(
            &recs.join(format!("{}.jsonl", fixture.name)),
            &Rec {
                id: &fixture.name,
                started: "2026-12-02T12:00:00Z",
                request: &fixture.request,
                head: fixture.head.clone(),
                frames,
                end: Some((Outcome::Complete, 0)),
            },
            fixture.path(),
            &fixture.method,
            request_headers,
        );
    }
    fixtures
}

/// A copy of `page` with `probe` run after the page's own script (it measures the layout and
/// writes what it found into `document.body.dataset`).
pub fn with_probe(page: &Path, probe: &str) -> PathBuf {
    let probed = page.with_extension("probe.html");
    let text = page_text(page).replacen("</body>", &format!("<script>{probe}</script></body>"), 1);
    std::fs::write(&probed, text).expect("probe page written");
    probed
}
