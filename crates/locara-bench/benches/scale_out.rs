//! Calls/s through a load balancer with one replica and with three, in the same run.
//!
//! `cargo bench -p locara-bench --bench scale_out` starts what `tests/all/scale_out.rs` starts
//! (a `docker-registry` holding `text.chunk`, three `locara serve --http --stateless` replicas
//! that installed it from there, haproxy in front) and drives `text.chunk` calls from
//! `LOCARA_SCALE_CLIENTS` keep-alive MCP clients (default 4), `LOCARA_SCALE_CALLS` calls a round
//! (default 4,000), through three set-ups in turn: one replica without a balancer, haproxy
//! over one replica, haproxy over three. Each set-up runs five rounds, interleaved, and the
//! median calls/s of each is printed with the ratios. Every answer is checked against its
//! call. Under `cargo test` (no `--bench` argument) it makes 40 calls a set-up, as a smoke test.
//!
//! What to expect from the ratio depends on the cores: replicas on one machine share its cores
//! with the clients and the balancer, so three replicas beat one only when one replica leaves
//! cores idle.

#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::{
    sync::{Arc, Barrier},
    time::Instant,
};

use locara_test_artifacts::cluster::{Cluster, McpClient};
use serde_json::json;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `calls` calls from `clients` threads to `addr`: calls/s.
fn round(addr: &str, key: &str, clients: usize, calls: usize) -> f64 {
    let barrier = Arc::new(Barrier::new(clients + 1));
    let threads: Vec<_> = (0..clients)
        .map(|client| {
            let (addr, key, barrier) = (addr.to_owned(), key.to_owned(), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let mut mcp = McpClient::new(&addr, &key);
                // One call first, so connections are open before the clock starts.
                mcp.call("text.chunk", &json!({"text": "warm", "max_chars": 8}))
                    .unwrap();
                barrier.wait();
                for n in 0..calls / clients {
                    let text = format!("c{client}n{n} second-chunk-of-the-call");
                    let answer = mcp
                        .call("text.chunk", &json!({"text": text, "max_chars": 12}))
                        .unwrap();
                    let first = answer["result"]["structuredContent"]["chunks"][0]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .trim();
                    assert_eq!(first, format!("c{client}n{n}"), "{answer}");
                }
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    for thread in threads {
        thread.join().unwrap();
    }
    (calls / clients * clients) as f64 / started.elapsed().as_secs_f64()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let benching = std::env::args().any(|a| a == "--bench");
    let clients = env_number("LOCARA_SCALE_CLIENTS", 4);
    let calls = if benching {
        env_number("LOCARA_SCALE_CALLS", 4000)
    } else {
        40
    };
    let rounds = if benching { 5 } else { 1 };
    let cluster = Cluster::start(locara_test_artifacts::locara_binary(), 3);
    let one = cluster.balancer(&[0]);
    let three = cluster.balancer(&[0, 1, 2]);
    let direct = format!("127.0.0.1:{}", cluster.replicas[0].port);
    let setups = [
        ("1 replica, no balancer", direct),
        ("haproxy over 1 replica", one.addr()),
        ("haproxy over 3 replicas", three.addr()),
    ];
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); setups.len()];
    for _ in 0..rounds {
        for (i, (_, addr)) in setups.iter().enumerate() {
            results[i].push(round(addr, &cluster.key, clients, calls));
        }
    }
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "scale-out: text.chunk over MCP (stateless HTTP), {clients} clients, {calls} calls a round, median of {rounds} rounds, {cores} cores"
    );
    let medians: Vec<f64> = results.into_iter().map(median).collect();
    for ((name, _), calls_per_s) in setups.iter().zip(&medians) {
        println!("  {name:<26} {calls_per_s:>8.0} calls/s");
    }
    println!(
        "  3 replicas / 1 replica (both behind haproxy): {:.2}x; haproxy's cost on 1 replica: {:.2}x",
        medians[2] / medians[1],
        medians[0] / medians[1]
    );
}
