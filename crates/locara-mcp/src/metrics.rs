//! What a server has done, in Prometheus's text format: calls by tool and outcome, their
//! latency, limits hit, calls in flight, and requests refused before any call.
//!
//! Written by hand: a few counters and histograms behind one lock need no client library,
//! and the format is small and stable (text exposition format 0.0.4).

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    sync::{
        Mutex, PoisonError,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use locara_facade::RunResponse;

/// The histogram's upper bounds, in seconds: from a warm text call (tens of µs) to a page of
/// OCR (seconds).
const BOUNDS: [f64; 14] = [
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 30.0,
];

/// A server's counters. Shared by its handlers (`LocaraMcp::with_metrics`) and its HTTP front.
#[derive(Debug, Default)]
pub struct Metrics {
    counts: Mutex<Counts>,
    in_flight: AtomicI64,
}

#[derive(Debug, Default)]
struct Counts {
    /// (tool, outcome) → calls.
    calls: BTreeMap<(String, String), u64>,
    /// (tool, limit) → calls stopped by it.
    limits: BTreeMap<(String, String), u64>,
    /// tool → latency.
    latency: BTreeMap<String, Histogram>,
    /// reason → HTTP requests refused before reaching a handler.
    refused: BTreeMap<String, u64>,
}

#[derive(Debug, Default)]
struct Histogram {
    buckets: [u64; BOUNDS.len()],
    sum: f64,
    count: u64,
}

/// A call in flight: counted down when dropped, however the call ends.
#[derive(Debug)]
pub(crate) struct InFlight<'m>(&'m Metrics);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Metrics {
    /// New, empty counters.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    pub(crate) fn start(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self)
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a call of `tool` that took `elapsed` and ended as `result` did.
    pub(crate) fn record(
        &self,
        tool: &str,
        elapsed: Duration,
        result: &Result<RunResponse, locara_facade::Error>,
    ) {
        let report = match result {
            Ok(response) => response.error.as_ref(),
            Err(error) => Some(error.report()),
        };
        let outcome = report.map_or("ok", |r| r.code.as_str());
        let mut counts = self.counts();
        *counts
            .calls
            .entry((tool.to_owned(), outcome.to_owned()))
            .or_default() += 1;
        if let Some(limit) = report.and_then(|r| r.limit.as_deref()) {
            *counts
                .limits
                .entry((tool.to_owned(), limit.to_owned()))
                .or_default() += 1;
        }
        let histogram = counts.latency.entry(tool.to_owned()).or_default();
        let seconds = elapsed.as_secs_f64();
        for (bucket, bound) in histogram.buckets.iter_mut().zip(BOUNDS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        histogram.sum += seconds;
        histogram.count += 1;
    }

    /// Records an HTTP request refused before reaching a handler (`unauthorized`,
    /// `invalid_token`, `rate_limited`, `too_many_in_flight`).
    pub(crate) fn refused(&self, reason: &str) {
        *self.counts().refused.entry(reason.to_owned()).or_default() += 1;
    }

    /// Everything, in Prometheus's text format.
    pub fn render(&self) -> String {
        let counts = self.counts();
        let mut out = String::new();
        family(
            &mut out,
            "locara_calls_total",
            "counter",
            "Tool calls, by tool and outcome (ok, or the error report's code).",
        );
        for ((tool, outcome), n) in &counts.calls {
            let _ = writeln!(
                out,
                "locara_calls_total{{tool=\"{}\",outcome=\"{}\"}} {n}",
                label(tool),
                label(outcome)
            );
        }
        family(
            &mut out,
            "locara_limits_exceeded_total",
            "counter",
            "Calls stopped by a limit, by tool and limit.",
        );
        for ((tool, limit), n) in &counts.limits {
            let _ = writeln!(
                out,
                "locara_limits_exceeded_total{{tool=\"{}\",limit=\"{}\"}} {n}",
                label(tool),
                label(limit)
            );
        }
        family(
            &mut out,
            "locara_call_duration_seconds",
            "histogram",
            "How long calls took, from request to answer, by tool.",
        );
        for (tool, histogram) in &counts.latency {
            let tool = label(tool);
            for (bucket, bound) in histogram.buckets.iter().zip(BOUNDS) {
                let _ = writeln!(
                    out,
                    "locara_call_duration_seconds_bucket{{tool=\"{tool}\",le=\"{bound}\"}} {bucket}"
                );
            }
            let _ = writeln!(
                out,
                "locara_call_duration_seconds_bucket{{tool=\"{tool}\",le=\"+Inf\"}} {}\n\
                 locara_call_duration_seconds_sum{{tool=\"{tool}\"}} {}\n\
                 locara_call_duration_seconds_count{{tool=\"{tool}\"}} {}",
                histogram.count, histogram.sum, histogram.count
            );
        }
        family(
            &mut out,
            "locara_calls_in_flight",
            "gauge",
            "Tool calls running now.",
        );
        let _ = writeln!(
            out,
            "locara_calls_in_flight {}",
            self.in_flight.load(Ordering::Acquire)
        );
        family(
            &mut out,
            "locara_http_refused_total",
            "counter",
            "HTTP requests refused before any call, by reason.",
        );
        for (reason, n) in &counts.refused {
            let _ = writeln!(
                out,
                "locara_http_refused_total{{reason=\"{}\"}} {n}",
                label(reason)
            );
        }
        out
    }
}

/// A metric family's `HELP` and `TYPE` lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A label value, escaped as the format asks (backslash, quote, newline).
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_escaped_label_cannot_break_the_line() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn an_empty_server_renders_every_family() {
        let metrics = Metrics::new();
        let _call = metrics.start();
        metrics.refused("invalid_token");
        let text = metrics.render();
        for family in [
            "locara_calls_total",
            "locara_limits_exceeded_total",
            "locara_call_duration_seconds",
            "locara_calls_in_flight",
            "locara_http_refused_total",
        ] {
            assert!(
                text.contains(&format!("# TYPE {family} ")),
                "{family}: {text}"
            );
        }
        assert!(text.contains("locara_calls_in_flight 1\n"), "{text}");
        assert!(
            text.contains("locara_http_refused_total{reason=\"invalid_token\"} 1\n"),
            "{text}"
        );
    }
}
