//! The report's bounds attacked, and the overview's columns and filters: a gzip bomb as a
//! buffered body stays a small page with a visible cut marker; rows are sorted by start time,
//! show their dialect and the quirks `--inject` put in, and filter on both.

use std::io::Write as _;
use std::time::Instant;

use tooltap::engine::ResponseHead;
use tooltap::record::Outcome;

use crate::engine_support::sse_head;
use crate::report::support::*;
use crate::support::TempDir;

#[test]
fn a_gzip_bomb_in_a_buffered_body_makes_a_small_page_that_says_what_it_cut() {
    let dir = TempDir::new("bomb");
    let recs = dir.join("recs");
    std::fs::create_dir_all(&recs).expect("dir");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![0u8; 80 << 20]).expect("in memory");
    let bomb = gz.finish().expect("in memory");
    assert!(bomb.len() < 200_000, "{} bytes", bomb.len());
    let frames: Vec<&[u8]> = bomb.chunks(16 << 10).collect();
    let head = ResponseHead {
        status: 200,
        content_type: Some("application/json".into()),
        content_encoding: Some("gzip".into()),
        headers: Vec::new(),
    };
    write_recording(
        &recs.join("bomb.jsonl"),
        &Rec {
            id: "bomb",
            started: "2026-12-02T12:00:00Z",
            request: &weather_request(false),
            head,
            frames,
            end: Some((Outcome::Complete, 0)),
        },
    );
    let page = dir.join("report.html");
    let started = Instant::now();
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_tooltap"))
        .arg("report")
        .arg(&recs)
        .arg("-o")
        .arg(&page)
        .output()
        .expect("tooltap runs");
    let took = started.elapsed();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let size = std::fs::metadata(&page).expect("page").len();
    eprintln!("80 MiB gzip bomb: page {size} bytes, report took {took:?} (debug build)");
    // Before the bound: a 303 MB page and 14 s in a debug build.
    assert!(size < 2_000_000, "page is {size} bytes");
    assert!(took.as_secs() < 10, "report took {took:?}");
    let dom = dump_dom(&page, "#exchange=bomb");
    assert_clean(&dom);
    assert!(
        dom.contains("cut: decoding stopped: decoded body exceeded"),
        "the cut is said in the page"
    );
}

#[test]
fn rows_are_sorted_by_start_time_with_dialect_and_injected_quirks_to_filter_on() {
    let dir = TempDir::new("columns");
    let recs = dir.join("recs");
    std::fs::create_dir_all(&recs).expect("dir");
    let finish = chunk(serde_json::json!({"content":"hi"}), Some("stop"));
    // File (id) order is the reverse of start order.
    for (id, started, path) in [
        ("a-late", "2026-12-02T12:00:03Z", "/v1/chat/completions"),
        ("b-middle", "2026-12-02T12:00:02Z", "/v1/responses"),
        ("c-early", "2026-12-02T12:00:01Z", "/v1/chat/completions"),
    ] {
        let file = recs.join(format!("{id}.jsonl"));
        write_recording_for(
            &file,
            &Rec {
                id,
                started,
                request: &weather_request(true),
                head: sse_head(),
                frames: vec![&finish, b"data: [DONE]\n\n"],
                end: Some((Outcome::Complete, 0)),
            },
            path,
        );
        if id == "b-middle" {
            let text = std::fs::read_to_string(&file).expect("read");
            let marked = text.replacen(
                r#""redacted":[]"#,
                r#""redacted":[],"injected":["delta.id_changed","finish.missing"]"#,
                1,
            );
            assert_ne!(marked, text);
            std::fs::write(&file, marked).expect("write");
        }
    }
    let page = dir.join("report.html");
    let data = build(&[recs], &page);
    assert!(data.unreadable.is_empty(), "{:?}", data.unreadable);
    let dom = dump_dom(&page, "");
    assert_clean(&dom);
    let rows: Vec<&str> = tags_with(&dom, &["exchange-row"])
        .into_iter()
        .map(|tag| attr(tag, "data-id"))
        .collect();
    assert_eq!(rows, ["c-early", "b-middle", "a-late"]);
    assert!(
        dom.contains("<th>dialect</th>") && dom.contains("<td class=\"dialect\">responses</td>")
    );
    assert_eq!(
        tags_with(
            &dom,
            &[
                "class=\"injected\"",
                "data-injected=\"delta.id_changed finish.missing\""
            ]
        )
        .len(),
        1
    );
    assert!(dom.contains("injected by tooltap: delta.id_changed, finish.missing"));
    for (filter, expected) in [
        ("#f=injected=(any)", vec!["b-middle"]),
        ("#f=injected=(none)", vec!["c-early", "a-late"]),
        ("#f=injected=finish.missing", vec!["b-middle"]),
        ("#f=dialect=chat", vec!["c-early", "a-late"]),
        // A link kept from a page that spelled Chat Completions the old way.
        ("#f=dialect=chat_completions", vec!["c-early", "a-late"]),
        ("#f=dialect=responses", vec!["b-middle"]),
    ] {
        let dom = dump_dom(&page, filter);
        let rows: Vec<&str> = tags_with(&dom, &["exchange-row"])
            .into_iter()
            .map(|tag| attr(tag, "data-id"))
            .collect();
        assert_eq!(rows, expected, "{filter}");
    }
}

/// Every rule's count stays inside its card at a 1400 px wide window, and a long rule list
/// scrolls in its card instead of running off it.
#[test]
fn every_rule_count_is_visible_in_a_1400_px_window() {
    let dir = TempDir::new("rules");
    let recs = dir.join("recs");
    std::fs::create_dir_all(&recs).expect("dir");
    write_fixtures(&recs);
    let page = dir.join("report.html");
    build(&[recs], &page);
    let probed = with_probe(
        &page,
        r##"(function () {
  var card = document.getElementById("by-rule").closest(".card"), box = card.getBoundingClientRect();
  var rows = 0, clipped = 0;
  document.querySelectorAll("#by-rule td.count").forEach(function (td) {
    rows++;
    var r = td.getBoundingClientRect();
    if (r.right > box.right + 0.5 || r.width < 1) clipped++;
  });
  var reachable = card.scrollHeight <= card.clientHeight + 1 || /auto|scroll/.test(getComputedStyle(card).overflowY);
  document.body.dataset.ruleRows = rows;
  document.body.dataset.ruleClipped = clipped;
  document.body.dataset.ruleReachable = reachable ? "yes" : "no";
  document.body.dataset.windowWidth = window.innerWidth;
})();"##,
    );
    let dom = dump_dom_at(&probed, "", "1400,950");
    assert_clean(&dom);
    assert_eq!(attr(&dom, "data-window-width"), "1400");
    let rows: usize = attr(&dom, "data-rule-rows").parse().expect("rows");
    assert!(rows > 10, "{rows} rule rows");
    assert_eq!(
        attr(&dom, "data-rule-clipped"),
        "0",
        "counts outside their card"
    );
    assert_eq!(attr(&dom, "data-rule-reachable"), "yes");
}
