//! Metric families: labelled counters and histograms behind a mutex each, and their rendering in
//! the Prometheus text exposition format. [`super::Metrics`] owns one of each family it exports.

use std::fmt::Write as _;
use std::sync::Mutex;

/// Series of one family keyed by their label values. A vector scanned by borrowed `&str`s, so
/// an update allocates only the first time a label set is seen (the request path updates
/// several families per exchange); rendering sorts a copy of the keys.
struct Series<V> {
    entries: Vec<(Vec<String>, V)>,
}

impl<V> Series<V> {
    const fn new() -> Self {
        Series {
            entries: Vec::new(),
        }
    }

    fn entry(&mut self, values: &[&str], make: impl FnOnce() -> V) -> &mut V {
        let found = self
            .entries
            .iter()
            .position(|(key, _)| key.iter().map(String::as_str).eq(values.iter().copied()));
        let index = match found {
            Some(index) => index,
            None => {
                let key = values.iter().map(|v| v.to_string()).collect();
                self.entries.push((key, make()));
                self.entries.len() - 1
            }
        };
        &mut self.entries[index].1
    }

    /// Entries in label order, for a stable exposition.
    fn sorted(&self) -> Vec<&(Vec<String>, V)> {
        let mut sorted: Vec<_> = self.entries.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        sorted
    }
}

/// A family of counters keyed by label values.
pub(super) struct CounterVec {
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    values: Mutex<Series<u64>>,
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
    values: Mutex<Series<HistogramData>>,
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
            values: Mutex::new(Series::new()),
        }
    }
    pub(super) fn add(&self, values: &[&str], n: u64) {
        debug_assert_eq!(values.len(), self.labels.len());
        *lock(&self.values).entry(values, || 0) += n;
    }
    pub(super) fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP {} {}\n# TYPE {} counter",
            self.name, self.help, self.name
        );
        for (values, n) in lock(&self.values).sorted() {
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
            values: Mutex::new(Series::new()),
        }
    }
    pub(super) fn observe(&self, values: &[&str], seconds: f64) {
        let mut series = lock(&self.values);
        let data = series.entry(values, || HistogramData {
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
        for (values, data) in lock(&self.values).sorted() {
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
