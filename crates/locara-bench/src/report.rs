//! Percentiles over per-call samples, and the tables the benchmarks print.

use std::{fmt::Write as _, time::Duration};

/// The p50, p99, maximum and mean of a set of per-call latencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// How many calls.
    pub calls: usize,
    /// The median.
    pub p50: Duration,
    /// The 99th percentile.
    pub p99: Duration,
    /// The slowest.
    pub max: Duration,
    /// The mean.
    pub mean: Duration,
}

impl Summary {
    /// Summarizes `samples` (in any order): percentiles by nearest rank on a sorted copy.
    ///
    /// # Panics
    /// When `samples` is empty.
    pub fn of(samples: &[Duration]) -> Summary {
        assert!(!samples.is_empty(), "no samples");
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let total: Duration = sorted.iter().sum();
        Summary {
            calls: sorted.len(),
            p50: percentile(&sorted, 50),
            p99: percentile(&sorted, 99),
            max: sorted[sorted.len() - 1],
            mean: total / u32::try_from(sorted.len()).unwrap_or(u32::MAX),
        }
    }
}

/// The nearest-rank `p`th percentile of an ascending, non-empty slice.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// What was measured.
    pub name: String,
    /// Its latencies.
    pub summary: Summary,
}

/// The bound a [`Ratio`] should respect.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// The ratio should be at most this.
    AtMost(f64),
    /// The ratio should be at least this.
    AtLeast(f64),
}

/// A ratio of two p50s measured in the same run, and its target.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratio {
    /// What is divided by what.
    pub name: String,
    /// The numerator's p50 over the denominator's.
    pub value: f64,
    /// The target, or `None` for a ratio shown for information.
    pub target: Option<Target>,
}

impl Ratio {
    /// `numerator.p50 / denominator.p50`, named after both rows.
    pub fn of(numerator: &Row, denominator: &Row, target: Option<Target>) -> Ratio {
        Ratio {
            name: format!("{} p50 / {} p50", numerator.name, denominator.name),
            value: numerator.summary.p50.as_secs_f64() / denominator.summary.p50.as_secs_f64(),
            target,
        }
    }

    /// Whether the target is met (`None` without a target).
    pub fn met(&self) -> Option<bool> {
        self.target.map(|target| match target {
            Target::AtMost(bound) => self.value <= bound,
            Target::AtLeast(bound) => self.value >= bound,
        })
    }
}

fn micros(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

/// The table of rows (p50, p99 and mean in microseconds) followed by the ratios.
pub fn render(rows: &[Row], ratios: &[Ratio]) -> String {
    let width = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(11);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<width$}  {:>6}  {:>10}  {:>10}  {:>10}",
        "measurement", "calls", "p50 µs", "p99 µs", "mean µs"
    );
    for row in rows {
        let s = &row.summary;
        let _ = writeln!(
            out,
            "{:<width$}  {:>6}  {:>10}  {:>10}  {:>10}",
            row.name,
            s.calls,
            micros(s.p50),
            micros(s.p99),
            micros(s.mean)
        );
    }
    for ratio in ratios {
        let verdict = match (ratio.target, ratio.met()) {
            (Some(Target::AtMost(bound)), Some(met)) => format!(
                "  target ≤ {bound}×: {}",
                if met { "met" } else { "NOT met" }
            ),
            (Some(Target::AtLeast(bound)), Some(met)) => format!(
                "  target ≥ {bound}×: {}",
                if met { "met" } else { "NOT met" }
            ),
            _ => String::new(),
        };
        let _ = writeln!(out, "{} = {:.2}×{verdict}", ratio.name, ratio.value);
    }
    out
}

/// The load driver's latency table: calls, p50, p99, maximum and mean in microseconds per row.
pub fn render_latencies(rows: &[Row]) -> String {
    let width = rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<width$}  {:>7}  {:>9}  {:>9}  {:>9}  {:>9}",
        "call", "calls", "p50 µs", "p99 µs", "max µs", "mean µs"
    );
    for row in rows {
        let s = &row.summary;
        let _ = writeln!(
            out,
            "{:<width$}  {:>7}  {:>9}  {:>9}  {:>9}  {:>9}",
            row.name,
            s.calls,
            micros(s.p50),
            micros(s.p99),
            micros(s.max),
            micros(s.mean)
        );
    }
    out
}
