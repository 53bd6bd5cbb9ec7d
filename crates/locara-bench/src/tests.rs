//! Tests of the percentiles, the tables, the output check and the `/proc` parsing.

use std::time::Duration;

use expect_test::{Expect, expect};
use serde_json::json;

use crate::{
    ProcessSample, Ratio, Row, Summary, Target, check_chunks, percent, render, render_latencies,
    render_samples, status_field,
};

fn us(micros: &[u64]) -> Vec<Duration> {
    micros.iter().map(|&m| Duration::from_micros(m)).collect()
}

fn check_summary(micros: &[u64], expect: Expect) {
    let s = Summary::of(&us(micros));
    expect.assert_eq(&format!(
        "calls {} p50 {:?} p99 {:?} max {:?} mean {:?}",
        s.calls, s.p50, s.p99, s.max, s.mean
    ));
}

#[test]
fn summary() {
    check_summary(&[7], expect!["calls 1 p50 7µs p99 7µs max 7µs mean 7µs"]);
    check_summary(
        &[4, 1, 3, 2],
        expect!["calls 4 p50 2µs p99 4µs max 4µs mean 2.5µs"],
    );
    let hundred: Vec<u64> = (1..=100).rev().collect();
    check_summary(
        &hundred,
        expect!["calls 100 p50 50µs p99 99µs max 100µs mean 50.5µs"],
    );
    let mut skewed = vec![10; 199];
    skewed.push(1000);
    check_summary(
        &skewed,
        expect!["calls 200 p50 10µs p99 10µs max 1ms mean 14.95µs"],
    );
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

#[test]
fn latency_table() {
    let rows = [
        Row {
            name: "all".to_owned(),
            summary: Summary::of(&us(&[100, 120, 4000])),
        },
        Row {
            name: "text.chunk".to_owned(),
            summary: Summary::of(&us(&[90])),
        },
    ];
    expect![[r#"
        call          calls     p50 µs     p99 µs     max µs    mean µs
        all               3      120.0     4000.0     4000.0     1406.7
        text.chunk        1       90.0       90.0       90.0       90.0
    "#]]
    .assert_eq(&render_latencies(&rows));
}

#[test]
fn proc_status_fields() {
    let status = "Name:\tload\nVmHWM:\t   87452 kB\nVmRSS:\t   80796 kB\nThreads:\t11\n";
    let fields = ["VmRSS", "VmHWM", "Threads", "VmSwap", "Name", "Vm"]
        .map(|name| format!("{name} {:?}", status_field(status, name)));
    expect![[
        r#"VmRSS Some(80796), VmHWM Some(87452), Threads Some(11), VmSwap None, Name None, Vm None"#
    ]]
    .assert_eq(&fields.join(", "));
    expect!["12.5 -50.0 0.0"].assert_eq(&format!(
        "{:.1} {:.1} {:.1}",
        percent(10.0, 80.0),
        percent(-40.0, 80.0),
        percent(5.0, 0.0)
    ));
}

#[test]
fn sample_table() {
    let sample = |calls, rss_kib, fds| ProcessSample {
        calls,
        rss_kib,
        anon_kib: rss_kib - 4000,
        peak_rss_kib: 90_000,
        fds,
        threads: 11,
        temp_dirs: 0,
    };
    let samples = [
        ("start".to_owned(), sample(0, 13_000, 5)),
        ("warm-up".to_owned(), sample(5000, 80_000, 11)),
        ("100%".to_owned(), sample(100_000, 81_000, 11)),
    ];
    expect![[r#"
        point      calls   RSS MiB   anon MiB   peak MiB   fds  threads  temp dirs
        start          0      12.7        8.8       87.9     5       11          0
        warm-up     5000      78.1       74.2       87.9    11       11          0
        100%      100000      79.1       75.2       87.9    11       11          0
    "#]]
    .assert_eq(&render_samples(&samples));
}
