//! The report of the bundled examples (recordings/examples): overview, filters, one streamed
//! exchange's timeline, the screenshot in docs/img, and the binary's exit codes.

use std::path::PathBuf;

use crate::report::support::*;
use crate::support::TempDir;

#[test]
fn the_overview_of_the_bundled_examples_counts_exchanges_and_rules() {
    let dir = TempDir::new("overview");
    let page = dir.join("report.html");
    let data = build(&[examples()], &page);
    assert_eq!(data.exchanges.len(), 7);
    let dom = dump_dom(&page, "");
    assert_clean(&dom);
    for n in 1..=7 {
        let id = format!("data-id=\"tex1-{n}\"");
        assert_eq!(tags_with(&dom, &["exchange-row", &id]).len(), 1, "row {id}");
    }
    assert!(
        dom.contains("<tr data-key=\"default\"><td>default</td><td class=\"count\">7</td></tr>")
    );
    assert!(dom.contains("data-key=\"tool_call.arguments_not_string\"><td>tool_call.arguments_not_string <span class=\"sev-error\">error</span></td><td class=\"count\">2</td>"));
    assert!(
        dom.contains("<tr data-key=\"gpt-4o-mini\"><td>gpt-4o-mini</td><td class=\"count\">5</td>")
    );
    assert_eq!(
        tags_with(&dom, &["rect", "chart-bar-error"]).len(),
        1,
        "one time bucket"
    );
    assert!(
        !page_text(&page).contains("https://"),
        "no external URL in the page"
    );
}

#[test]
fn filters_from_the_link_update_every_table() {
    let dir = TempDir::new("filters");
    let page = dir.join("report.html");
    build(&[examples()], &page);
    let dom = dump_dom(&page, "#f=rule=delta.id_changed;mode=stream");
    assert_clean(&dom);
    assert_eq!(tags_with(&dom, &["exchange-row"]).len(), 1);
    assert_eq!(
        tags_with(&dom, &["exchange-row", "data-id=\"tex1-5\""]).len(),
        1
    );
    assert!(dom.contains("<tr data-key=\"default\"><td>default</td><td class=\"count\">1</td>"));
    assert_eq!(tags_with(&dom, &["data-key=\"delta.id_changed\""]).len(), 1);
    assert_eq!(
        tags_with(&dom, &["data-key=\"tool_call.arguments_not_string\""]).len(),
        0
    );
    assert!(dom.contains("(1 of 7)"));
}

#[test]
fn a_streamed_violation_is_marked_on_its_fragment_lane_and_frame() {
    let dir = TempDir::new("stream");
    let page = dir.join("report.html");
    build(&[examples()], &page);
    let dom = dump_dom(&page, "#exchange=tex1-5");
    assert_clean(&dom);
    let s = section(&dom, "tex1-5");
    for lane in ["content", "0", "other"] {
        assert_eq!(
            tags_with(s, &["class=\"lane\"", &format!("data-lane=\"{lane}\"")]).len(),
            1,
            "lane {lane}"
        );
    }
    // Frame 1 opens call 0 (id, name, empty arguments); frame 3 sends a second id on index 0.
    for kind in ["id", "name", "arguments"] {
        assert_eq!(
            tags_with(
                s,
                &[
                    "frag kind-",
                    "data-seq=\"1\"",
                    &format!("data-kind=\"{kind}\"")
                ]
            )
            .len(),
            1,
            "{kind}"
        );
    }
    let violating = tags_with(s, &["frag kind-id violating", "data-seq=\"3\""]);
    assert_eq!(violating.len(), 1, "{s}");
    assert!(violating[0].contains("delta.id_changed"));
    let marks = tags_with(
        s,
        &[
            "class=\"mark sev-error\"",
            "data-rule=\"delta.id_changed\"",
            "data-lane=\"0\"",
            "data-seq=\"3\"",
        ],
    );
    assert_eq!(marks.len(), 1);
    assert!(s.contains("<a href=\"docs/rules.md#deltaid_changed\">delta.id_changed</a> <code>/choices/0/delta/tool_calls/0/id</code>"));
    assert!(s.contains("<p class=\"declared-tools\"><code>get_weather</code></p>"));
    assert!(s.contains("<pre class=\"tool-choice\">\"required\"</pre>"));
    assert!(
        s.contains("tooltap check recordings/examples/failures/parallel-all-index-0.jsonl")
            || s.contains("parallel-all-index-0.jsonl")
    );
    assert!(s.contains("tooltap replay --recordings"));
    assert!(
        s.contains("\"name\": \"get_weather\""),
        "reassembled calls shown"
    );
    assert_eq!(
        tags_with(s, &["class=\"frame\"", "data-frame-seq="]).len(),
        7,
        "every raw frame"
    );
}

#[test]
fn a_screenshot_of_the_bundled_examples_is_drawn() {
    let dir = TempDir::new("shot");
    let page = dir.join("report.html");
    // Relative, as a user would type it (cargo runs tests in the package root).
    build(&[PathBuf::from("recordings/examples")], &page);
    let png = dir.join("report.png");
    screenshot(&page, "#exchange=tex1-5", &png, "1400,1150");
    let bytes = std::fs::read(&png).expect("png");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "{} bytes",
        bytes.len()
    );
    if std::env::var_os("TOOLTAP_UPDATE_SCREENSHOTS").is_some() {
        let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/img");
        std::fs::create_dir_all(&docs).expect("docs/img");
        std::fs::copy(&png, docs.join("report-exchange.png")).expect("copied");
        screenshot(&page, "", &docs.join("report-overview.png"), "1400,950");
    }
}

#[test]
fn the_binary_writes_the_page_and_names_unreadable_inputs() {
    let dir = TempDir::new("binary");
    let page = dir.join("out.html");
    let run = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_tooltap"))
            .arg("report")
            .args(args)
            .output()
            .expect("tooltap runs")
    };
    let ok = run(&[examples().as_os_str(), "-o".as_ref(), page.as_os_str()]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stderr).contains("7 exchanges written"));
    assert!(page_text(&page).contains("\"id\":\"tex1-5\""));
    let junk = dir.join("junk.jsonl");
    std::fs::write(&junk, "not a recording\n").expect("junk");
    let bad = run(&[junk.as_os_str(), "-o".as_ref(), page.as_os_str()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("junk.jsonl:1"));
    let dom = dump_dom(&page, "");
    assert_clean(&dom);
    assert!(dom.contains("Unreadable inputs:") && dom.contains("junk.jsonl:1"));
}
