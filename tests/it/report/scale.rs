//! 10,000 small exchanges: the page's size and the time Chromium takes to open it.

use std::time::Instant;

use crate::report::support::*;
use crate::support::TempDir;

#[test]
fn ten_thousand_small_exchanges_stay_small_and_open_fast() {
    let dir = TempDir::new("10k");
    let recs = dir.join("recs");
    std::fs::create_dir_all(&recs).expect("dir");
    write_small_exchanges(&recs, 10_000);
    let page = dir.join("report.html");
    let built = Instant::now();
    let data = build(&[recs], &page);
    let build_ms = built.elapsed().as_millis();
    assert_eq!(data.exchanges.len(), 10_000);
    let size = std::fs::metadata(&page).expect("page").len();
    let loaded = Instant::now();
    let dom = dump_dom(&page, "");
    let chromium_ms = loaded.elapsed().as_millis();
    assert_clean(&dom);
    let render_ms: f64 = attr(&dom, "data-render-ms").parse().expect("render ms");
    let load_ms: f64 = attr(&dom, "data-load-ms").parse().expect("load ms");
    eprintln!(
        "10k exchanges: page {size} bytes ({:.1} MB), built in {build_ms} ms (debug build), \
               navigation start to rendered page {load_ms} ms (of which parse + render {render_ms} ms), \
               chromium process start to dumped DOM {chromium_ms} ms",
        size as f64 / 1e6
    );
    assert!(size < 20_000_000, "page is {size} bytes");
    // The bar is 2 s; the machine is shared by several builders, so allow twice that
    // before failing and print the measured value.
    assert!(load_ms < 4_000.0, "the page took {load_ms} ms to open");
    assert!(dom.contains("page 1 of 200"));
    assert_eq!(
        tags_with(&dom, &["exchange-row"]).len(),
        50,
        "one page of rows in the DOM"
    );
    assert!(
        dom.contains("<td class=\"count\">1000</td>"),
        "1000 violations of one rule"
    );
    // 10,000 files and a 17 MB page: not left behind in the temp folder.
    let _ = std::fs::remove_dir_all(&dir);
}
