//! Tests of the metrics registry: exposition format, cumulative buckets, bounded labels.

use super::*;

#[test]
fn counters_render_with_escaped_labels() {
    let m = Metrics::default();
    m.request("default", 200);
    m.request("default", 200);
    m.violation(
        "r\"1",
        "gpt\n",
        "tool_call.arguments_not_string",
        "error",
        "chat",
    );
    let text = m.render();
    assert!(text.contains("# TYPE tooltap_requests_total counter"));
    assert!(text.contains("tooltap_requests_total{route=\"default\",status=\"200\"} 2\n"));
    assert!(text.contains(
        "tooltap_violations_total{route=\"r\\\"1\",model=\"gpt\\n\",rule=\"tool_call.arguments_not_string\",severity=\"error\",dialect=\"chat\"} 1\n"
    ));
}

#[test]
fn histogram_buckets_are_cumulative_and_end_in_inf() {
    let m = Metrics::default();
    m.upstream_ttfb("default", Duration::from_millis(3));
    m.upstream_ttfb("default", Duration::from_millis(30));
    m.upstream_ttfb("default", Duration::from_secs(600)); // beyond the last bucket
    let text = m.render();
    let line = |le: &str| {
        let prefix =
            format!("tooltap_upstream_ttfb_seconds_bucket{{route=\"default\",le=\"{le}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()).map(str::to_string))
            .unwrap_or_else(|| panic!("no bucket {le} in\n{text}"))
    };
    assert_eq!(line("0.001"), "0");
    assert_eq!(line("0.005"), "1");
    assert_eq!(line("0.05"), "2");
    assert_eq!(line("60"), "2");
    assert_eq!(line("+Inf"), "3");
    assert!(text.contains("tooltap_upstream_ttfb_seconds_count{route=\"default\"} 3\n"));
}

#[test]
fn model_labels_are_sanitised_capped_and_bounded() {
    let m = Metrics::default();
    assert_eq!(m.model_label(None), "unknown");
    assert_eq!(m.model_label(Some("gpt-4o-mini")), "gpt-4o-mini");
    assert_eq!(m.model_label(Some("evil\"} 1\nx")), "evil1x");
    assert_eq!(m.model_label(Some(&"a".repeat(500))).len(), MAX_LABEL_LEN);
    for i in 0..MAX_MODELS * 2 {
        m.model_label(Some(&format!("model-{i}")));
    }
    assert_eq!(m.model_label(Some("yet-another")), "other");
    // A model seen before the cap keeps its own label.
    assert_eq!(m.model_label(Some("gpt-4o-mini")), "gpt-4o-mini");
}

#[test]
fn incomplete_reasons_have_stable_names() {
    let m = Metrics::default();
    m.incomplete("default", IncompleteReason::ReaderGone);
    assert!(m.render().contains(
        "tooltap_inspection_incomplete_total{route=\"default\",reason=\"client_gone\"} 1"
    ));
}

#[test]
fn every_family_is_listed_in_the_monitoring_doc() {
    let doc = include_str!("../../docs/monitoring.md");
    let rendered = Metrics::default().render();
    let families: Vec<&str> = rendered
        .lines()
        .filter_map(|line| line.strip_prefix("# HELP "))
        .filter_map(|rest| rest.split(' ').next())
        .collect();
    assert!(families.len() >= 20, "{families:?}");
    for family in families {
        assert!(
            doc.contains(&format!("| `{family}` |")),
            "{family} is not in docs/monitoring.md's metrics table"
        );
    }
}
