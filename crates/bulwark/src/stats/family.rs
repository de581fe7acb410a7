//! The one shape every statistic takes on its way out: a metric family (a name,
//! help text, a kind and labelled samples). Collection fills these from the
//! per-worker counters and the other sources; `ctl stats` (text or JSON) and the
//! Prometheus endpoint render the same list, so the two can never disagree.

/// Counters only rise; gauges go both ways; histograms carry cumulative buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
}

/// One metric family. `name` is the full Prometheus name, `bulwark_` prefixed,
/// counters ending in `_total` (e.g. `bulwark_queries_total`).
#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: MetricKind,
    pub samples: Vec<Sample>,
}

/// One labelled value of a family. Label names follow Prometheus rules
/// (`[a-zA-Z_][a-zA-Z0-9_]*`); values are free text (escaped when rendered).
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: Vec<(&'static str, String)>,
    pub value: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(u64),
    Float(f64),
    /// Cumulative buckets `(upper bound, count of observations ≤ bound)` in
    /// increasing order, without the `+Inf` bucket (which is `count`).
    Histogram {
        buckets: Vec<(f64, u64)>,
        sum: f64,
        count: u64,
    },
}
