//! Reading tooltap's `/metrics` in tests: fetch the text, sum one family's samples, and
//! [`assert_metric!`] on it with the family's lines in the failure message.
//!
//! Input: the admin listener (or a scraped text); output: sample sums. Labels are matched as
//! fragments of the sample line (`"status=\"200\""`, a rule id), so a test names only the labels
//! it cares about.

use crate::support::client::{exchange, request};
use tooltap::proxy::server::RunningProxy;

/// `/metrics` as served by the admin listener.
pub async fn metrics(tooltap: &RunningProxy) -> String {
    let admin = tooltap.admin_addr().expect("admin listener on");
    let collected = exchange(admin, request(admin, "GET", "/metrics", "")).await;
    assert_eq!(collected.status, 200);
    String::from_utf8(collected.body.to_vec()).expect("utf-8 metrics")
}

/// The sum of every sample of one metric family whose line contains all of `labels`.
pub fn metric_sum(text: &str, name: &str, labels: &[&str]) -> u64 {
    family(text, name)
        .filter(|line| labels.iter().all(|label| line.contains(label)))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// The sample lines of one family (for failure messages).
pub fn family<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    text.lines().filter(move |line| {
        line.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
    })
}

/// `assert_metric!(text, "family", ["label", ...] OP value)` with OP one of `==`, `>=`, `>`,
/// `<=`, `<`: compares the sum of the family's matching samples, and on failure prints the
/// comparison and every sample line of the family. An optional trailing message follows a comma.
macro_rules! assert_metric {
    ($text:expr, $name:expr, [$($label:expr),* $(,)?] $op:tt $value:expr $(, $($message:tt)+)?) => {{
        let text: &str = &$text;
        let labels: &[&str] = &[$($label),*];
        let got = $crate::support::metrics::metric_sum(text, $name, labels);
        let want = $value;
        if !(got $op want) {
            let lines: Vec<&str> = $crate::support::metrics::family(text, $name).collect();
            panic!(
                "{} {:?} = {got}, expected {} {want}{}\nsamples:\n{}",
                $name,
                labels,
                stringify!($op),
                { let note: String = String::new() $(+ ": " + &format!($($message)+))?; note },
                lines.join("\n"),
            );
        }
    }};
}
pub(crate) use assert_metric;

#[test]
fn sums_match_labels_and_the_family_name_exactly() {
    let text = "a_total{rule=\"x\"} 2\na_total{rule=\"y\"} 3\na_total_more 7\na_total 1\n";
    assert_eq!(metric_sum(text, "a_total", &[]), 6);
    assert_eq!(metric_sum(text, "a_total", &["rule=\"y\""]), 3);
    assert_metric!(text, "a_total", ["rule=\"x\""] == 2);
    let failed = std::panic::catch_unwind(|| assert_metric!(text, "a_total", [] > 6, "why {}", 1));
    let message = failed.expect_err("6 > 6 fails");
    let message = message.downcast_ref::<String>().expect("formatted panic");
    assert!(message.contains("expected > 6: why 1"), "{message}");
    assert!(message.contains("a_total{rule=\"y\"} 3"), "{message}");
}
