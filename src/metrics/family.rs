//! Metric families: labelled counters and histograms behind a mutex each, and their rendering in
//! the Prometheus text exposition format. [`super::Metrics`] owns one of each family it exports.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

/// A family of counters keyed by label values.
pub(super) struct CounterVec {
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    values: Mutex<BTreeMap<Vec<String>, u64>>,
}

struct HistogramData {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

/// A family of histograms keyed by label values.
pub(super) struct HistogramVec {
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    buckets: &'static [f64],
    values: Mutex<BTreeMap<Vec<String>, HistogramData>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding a metrics lock leaves plain numbers behind: keep serving them.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl CounterVec {
    pub(super) const fn new(
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
    ) -> Self {
        CounterVec {
            name,
            help,
            labels,
            values: Mutex::new(BTreeMap::new()),
        }
    }
    pub(super) fn add(&self, values: &[&str], n: u64) {
        debug_assert_eq!(values.len(), self.labels.len());
        let key = values.iter().map(|v| v.to_string()).collect();
        *lock(&self.values).entry(key).or_insert(0) += n;
    }
    pub(super) fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP {} {}\n# TYPE {} counter",
            self.name, self.help, self.name
        );
        for (values, n) in lock(&self.values).iter() {
            let _ = writeln!(
                out,
                "{}{} {}",
                self.name,
                label_set(self.labels, values, None),
                n
            );
        }
    }
}

impl HistogramVec {
    pub(super) const fn new(
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
        buckets: &'static [f64],
    ) -> Self {
        HistogramVec {
            name,
            help,
            labels,
            buckets,
            values: Mutex::new(BTreeMap::new()),
        }
    }
    pub(super) fn observe(&self, values: &[&str], seconds: f64) {
        let key = values.iter().map(|v| v.to_string()).collect();
        let mut map = lock(&self.values);
        let data = map.entry(key).or_insert_with(|| HistogramData {
            counts: vec![0; self.buckets.len()],
            sum: 0.0,
            count: 0,
        });
        if let Some(i) = self.buckets.iter().position(|le| seconds <= *le) {
            data.counts[i] += 1;
        }
        data.sum += seconds;
        data.count += 1;
    }
    pub(super) fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP {} {}\n# TYPE {} histogram",
            self.name, self.help, self.name
        );
        for (values, data) in lock(&self.values).iter() {
            let mut cumulative = 0;
            for (le, n) in self.buckets.iter().zip(&data.counts) {
                cumulative += n;
                let labels = label_set(self.labels, values, Some(&le.to_string()));
                let _ = writeln!(out, "{}_bucket{} {}", self.name, labels, cumulative);
            }
            let inf = label_set(self.labels, values, Some("+Inf"));
            let plain = label_set(self.labels, values, None);
            let _ = writeln!(out, "{}_bucket{} {}", self.name, inf, data.count);
            let _ = writeln!(out, "{}_sum{} {}", self.name, plain, data.sum);
            let _ = writeln!(out, "{}_count{} {}", self.name, plain, data.count);
        }
    }
}

/// `{a="x",b="y"}` with values escaped as the exposition format requires.
fn label_set(names: &[&str], values: &[String], le: Option<&str>) -> String {
    let mut pairs: Vec<String> = names
        .iter()
        .zip(values)
        .map(|(n, v)| format!("{n}=\"{}\"", escape(v)))
        .collect();
    if let Some(le) = le {
        pairs.push(format!("le=\"{le}\""));
    }
    if pairs.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", pairs.join(","))
    }
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
