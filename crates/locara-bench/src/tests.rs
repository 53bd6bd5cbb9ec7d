//! Tests of the percentiles, the table and the output check.

use std::time::Duration;

use expect_test::{Expect, expect};
use serde_json::json;

use crate::{Ratio, Row, Summary, Target, check_chunks, render};

fn us(micros: &[u64]) -> Vec<Duration> {
    micros.iter().map(|&m| Duration::from_micros(m)).collect()
}

fn check_summary(micros: &[u64], expect: Expect) {
    let s = Summary::of(&us(micros));
    expect.assert_eq(&format!(
        "calls {} p50 {:?} p99 {:?} mean {:?}",
        s.calls, s.p50, s.p99, s.mean
    ));
}

#[test]
fn summary() {
    check_summary(&[7], expect!["calls 1 p50 7µs p99 7µs mean 7µs"]);
    check_summary(&[4, 1, 3, 2], expect!["calls 4 p50 2µs p99 4µs mean 2.5µs"]);
    let hundred: Vec<u64> = (1..=100).rev().collect();
    check_summary(&hundred, expect!["calls 100 p50 50µs p99 99µs mean 50.5µs"]);
    let mut skewed = vec![10; 199];
    skewed.push(1000);
    check_summary(&skewed, expect!["calls 200 p50 10µs p99 10µs mean 14.95µs"]);
}

#[test]
fn table() {
    let row = |name: &str, micros: &[u64]| Row {
        name: name.to_owned(),
        summary: Summary::of(&us(micros)),
    };
    let pipeline = row("pipeline", &[100, 120, 400]);
    let floor = row("raw floor", &[40, 50, 60]);
    let spawn = row("spawn /bin/true", &[900, 1000, 1500]);
    let ratios = [
        Ratio::of(&pipeline, &floor, Some(Target::AtMost(3.0))),
        Ratio::of(&spawn, &pipeline, Some(Target::AtLeast(50.0))),
        Ratio::of(&floor, &pipeline, None),
    ];
    expect![[r#"
        measurement       calls      p50 µs      p99 µs     mean µs
        pipeline              3       120.0       400.0       206.7
        raw floor             3        50.0        60.0        50.0
        spawn /bin/true       3      1000.0      1500.0      1133.3
        pipeline p50 / raw floor p50 = 2.40×  target ≤ 3×: met
        spawn /bin/true p50 / pipeline p50 = 8.33×  target ≥ 50×: NOT met
        raw floor p50 / pipeline p50 = 0.42×
    "#]]
    .assert_eq(&render(&[pipeline, floor, spawn], &ratios));
}

fn check_output(output: serde_json::Value, expect: Expect) {
    let verdict = match check_chunks(&output, "ab cd", 3) {
        Ok(()) => "ok".to_owned(),
        Err(message) => message,
    };
    expect.assert_eq(&verdict);
}

#[test]
fn output_check() {
    let chunk = |index: u64, text: &str, start: u64, end: u64| json!({"index": index, "text": text, "start": start, "end": end});
    check_output(
        json!({"chunks": [chunk(0, "ab ", 0, 3), chunk(1, "cd", 3, 5)], "count": 2}),
        expect!["ok"],
    );
    check_output(
        json!({"chunks": [chunk(0, "ab ", 0, 3), chunk(1, "cd", 3, 5)], "count": 3}),
        expect!["count is 3 but there are 2 chunks"],
    );
    check_output(
        json!({"chunks": [chunk(0, "ab c", 0, 4)], "count": 1}),
        expect!["chunk 0 has 4 characters (max 3)"],
    );
    check_output(
        json!({"chunks": [chunk(0, "ab ", 0, 3), chunk(1, "cd", 2, 4)], "count": 2}),
        expect![
            "chunk 1 has (index, start, end) (Some(1), Some(2), Some(4)), expected (Some(1), Some(3), Some(5))"
        ],
    );
    check_output(
        json!({"chunks": [chunk(0, "ab ", 0, 3)], "count": 1}),
        expect![[r#"the chunks join to "ab ", not to the input"#]],
    );
    check_output(json!({"error": "nope"}), expect!["no `chunks` array"]);
}
