//! Renders metric families as Prometheus text, `ctl stats` text and JSON.
//! All three read the same `families()` list, so they always agree.

use std::fmt::Write as _;

use crate::stats::{Family, MetricKind, Sample, Value};

/// The content type of [`prometheus`]'s output (text exposition format 0.0.4).
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The Prometheus text exposition format 0.0.4: `# HELP` and `# TYPE` lines, then
/// one line per sample; a histogram as cumulative `_bucket{le="..."}` lines ending
/// with `le="+Inf"`, then `_sum` and `_count`.
pub fn prometheus(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        let _ = writeln!(out, "# HELP {} {}", f.name, escape_help(f.help));
        let _ = writeln!(out, "# TYPE {} {}", f.name, kind_name(f.kind));
        for s in &f.samples {
            sample_lines(&mut out, f.name, s);
        }
    }
    out
}

/// `ctl stats`: one `name{labels} value` line per sample, histograms as their
/// bucket, sum and count lines, without the HELP and TYPE comments.
pub fn text(families: &[Family]) -> String {
    let mut out = String::new();
    for f in families {
        for s in &f.samples {
            sample_lines(&mut out, f.name, s);
        }
    }
    out
}

/// `ctl stats --json`: one object keyed by family name, each with its `type`,
/// `help` and `samples` (`labels` as an object; `value` a number, or for a
/// histogram an object of `buckets` `[[le, count], ...]`, `sum` and `count`).
pub fn json(families: &[Family]) -> String {
    let mut root = serde_json::Map::new();
    for f in families {
        let samples: Vec<serde_json::Value> = f
            .samples
            .iter()
            .map(|s| {
                let labels: serde_json::Map<String, serde_json::Value> = s
                    .labels
                    .iter()
                    .map(|(k, v)| ((*k).to_string(), serde_json::Value::from(v.as_str())))
                    .collect();
                serde_json::json!({ "labels": labels, "value": json_value(&s.value) })
            })
            .collect();
        root.insert(
            f.name.to_string(),
            serde_json::json!({
                "type": kind_name(f.kind),
                "help": f.help,
                "samples": samples,
            }),
        );
    }
    serde_json::Value::Object(root).to_string()
}

fn json_value(v: &Value) -> serde_json::Value {
    match v {
        Value::Int(n) => serde_json::Value::from(*n),
        // NaN and infinities have no JSON form: they become null.
        Value::Float(x) => serde_json::Value::from(*x),
        Value::Histogram {
            buckets,
            sum,
            count,
        } => serde_json::json!({
            "buckets": buckets.iter().map(|(le, n)| serde_json::json!([le, n])).collect::<Vec<_>>(),
            "sum": sum,
            "count": count,
        }),
    }
}

fn kind_name(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Counter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Histogram => "histogram",
    }
}

fn sample_lines(out: &mut String, name: &str, s: &Sample) {
    match &s.value {
        Value::Int(n) => line(out, name, "", &s.labels, None, &n.to_string()),
        Value::Float(x) => line(out, name, "", &s.labels, None, &float(*x)),
        Value::Histogram {
            buckets,
            sum,
            count,
        } => {
            for (le, n) in buckets {
                line(
                    out,
                    name,
                    "_bucket",
                    &s.labels,
                    Some(&float(*le)),
                    &n.to_string(),
                );
            }
            line(
                out,
                name,
                "_bucket",
                &s.labels,
                Some("+Inf"),
                &count.to_string(),
            );
            line(out, name, "_sum", &s.labels, None, &float(*sum));
            line(out, name, "_count", &s.labels, None, &count.to_string());
        }
    }
}

/// `name{a="x",le="0.5"} value`; no braces when there are no labels.
fn line(
    out: &mut String,
    name: &str,
    suffix: &str,
    labels: &[(&'static str, String)],
    le: Option<&str>,
    value: &str,
) {
    out.push_str(name);
    out.push_str(suffix);
    if !labels.is_empty() || le.is_some() {
        out.push('{');
        let mut first = true;
        let all = labels
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .chain(le.map(|le| ("le", le)));
        for (k, v) in all {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(k);
            out.push_str("=\"");
            escape_label_value(out, v);
            out.push('"');
        }
        out.push('}');
    }
    out.push(' ');
    out.push_str(value);
    out.push('\n');
}

/// Exposition format: in label values `\`, `"` and newline are escaped.
fn escape_label_value(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Exposition format: in HELP text `\` and newline are escaped (quotes are not).
fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A float as Prometheus spells it: `+Inf`, `-Inf`, `NaN`, else Rust's shortest
/// round-tripping decimal (`0.005`, `1`, `2.5`).
fn float(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_string()
    } else if x == f64::INFINITY {
        "+Inf".to_string()
    } else if x == f64::NEG_INFINITY {
        "-Inf".to_string()
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    fn queries() -> Family {
        Family {
            name: "bulwark_queries_total",
            help: "Queries received.",
            kind: MetricKind::Counter,
            samples: vec![
                Sample {
                    labels: vec![("transport", "udp".to_string())],
                    value: Value::Int(12),
                },
                Sample {
                    labels: vec![("transport", "tcp".to_string())],
                    value: Value::Int(3),
                },
            ],
        }
    }

    fn latency() -> Family {
        Family {
            name: "bulwark_query_duration_seconds",
            help: "Time to answer a query.",
            kind: MetricKind::Histogram,
            samples: vec![Sample {
                labels: vec![("transport", "udp".to_string())],
                value: Value::Histogram {
                    buckets: vec![(0.0001, 2), (0.001, 5)],
                    sum: 0.0025,
                    count: 6,
                },
            }],
        }
    }

    fn uptime() -> Family {
        Family {
            name: "bulwark_uptime_seconds",
            help: "Seconds since start.",
            kind: MetricKind::Gauge,
            samples: vec![Sample {
                labels: vec![],
                value: Value::Float(1.5),
            }],
        }
    }

    #[test]
    fn prometheus_counter_has_help_type_and_labelled_lines() {
        assert_eq!(
            prometheus(&[queries()]).as_bytes(),
            b"# HELP bulwark_queries_total Queries received.\n\
              # TYPE bulwark_queries_total counter\n\
              bulwark_queries_total{transport=\"udp\"} 12\n\
              bulwark_queries_total{transport=\"tcp\"} 3\n"
        );
    }

    #[test]
    fn prometheus_gauge_without_labels_has_no_braces() {
        assert_eq!(
            prometheus(&[uptime()]).as_bytes(),
            b"# HELP bulwark_uptime_seconds Seconds since start.\n\
              # TYPE bulwark_uptime_seconds gauge\n\
              bulwark_uptime_seconds 1.5\n"
        );
    }

    #[test]
    fn prometheus_histogram_has_cumulative_buckets_inf_sum_and_count() {
        assert_eq!(
            prometheus(&[latency()]).as_bytes(),
            b"# HELP bulwark_query_duration_seconds Time to answer a query.\n\
              # TYPE bulwark_query_duration_seconds histogram\n\
              bulwark_query_duration_seconds_bucket{transport=\"udp\",le=\"0.0001\"} 2\n\
              bulwark_query_duration_seconds_bucket{transport=\"udp\",le=\"0.001\"} 5\n\
              bulwark_query_duration_seconds_bucket{transport=\"udp\",le=\"+Inf\"} 6\n\
              bulwark_query_duration_seconds_sum{transport=\"udp\"} 0.0025\n\
              bulwark_query_duration_seconds_count{transport=\"udp\"} 6\n"
        );
    }

    #[test]
    fn prometheus_escapes_label_values_and_help() {
        let f = Family {
            name: "bulwark_zone_serial",
            help: "A back\\slash\nand a newline.",
            kind: MetricKind::Gauge,
            samples: vec![Sample {
                labels: vec![("zone", "a\"b\\c\nd".to_string())],
                value: Value::Int(7),
            }],
        };
        assert_eq!(
            prometheus(&[f]).as_bytes(),
            b"# HELP bulwark_zone_serial A back\\\\slash\\nand a newline.\n\
              # TYPE bulwark_zone_serial gauge\n\
              bulwark_zone_serial{zone=\"a\\\"b\\\\c\\nd\"} 7\n"
        );
    }

    #[test]
    fn prometheus_spells_special_floats_its_way() {
        assert_eq!(float(f64::INFINITY), "+Inf");
        assert_eq!(float(f64::NEG_INFINITY), "-Inf");
        assert_eq!(float(f64::NAN), "NaN");
        assert_eq!(float(1.0), "1");
        assert_eq!(float(0.005), "0.005");
    }

    #[test]
    fn text_is_one_line_per_sample_without_comments() {
        assert_eq!(
            text(&[queries(), latency(), uptime()]).as_bytes(),
            b"bulwark_queries_total{transport=\"udp\"} 12\n\
              bulwark_queries_total{transport=\"tcp\"} 3\n\
              bulwark_query_duration_seconds_bucket{transport=\"udp\",le=\"0.0001\"} 2\n\
              bulwark_query_duration_seconds_bucket{transport=\"udp\",le=\"0.001\"} 5\n\
              bulwark_query_duration_seconds_bucket{transport=\"udp\",le=\"+Inf\"} 6\n\
              bulwark_query_duration_seconds_sum{transport=\"udp\"} 0.0025\n\
              bulwark_query_duration_seconds_count{transport=\"udp\"} 6\n\
              bulwark_uptime_seconds 1.5\n"
        );
    }

    #[test]
    fn json_is_one_object_keyed_by_family() {
        let out = json(&[queries(), latency(), uptime()]);
        assert!(!out.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let q = &v["bulwark_queries_total"];
        assert_eq!(q["type"], "counter");
        assert_eq!(q["help"], "Queries received.");
        assert_eq!(q["samples"][0]["labels"]["transport"], "udp");
        assert_eq!(q["samples"][0]["value"], 12);
        let h = &v["bulwark_query_duration_seconds"]["samples"][0]["value"];
        assert_eq!(h["count"], 6);
        assert_eq!(h["buckets"][1][0], 0.001);
        assert_eq!(h["buckets"][1][1], 5);
        assert_eq!(v["bulwark_uptime_seconds"]["samples"][0]["value"], 1.5);
    }

    #[test]
    fn empty_list_renders_empty() {
        assert_eq!(prometheus(&[]), "");
        assert_eq!(text(&[]), "");
        assert_eq!(json(&[]), "{}");
    }
}
