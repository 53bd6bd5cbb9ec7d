//! Scale-out, end to end: three stateless `locara serve` replicas, each with its tools
//! installed from a real OCI registry (`docker-registry`), behind a real load balancer
//! (haproxy), loaded by four MCP clients at once. The load spreads over every replica, and a
//! replica stopped mid-run (SIGTERM, as an orchestrator stops a pod) loses no call: it drains
//! what it holds and exits, and the balancer sends the rest to the others. Calls/s with one
//! replica and with three are `cargo bench -p locara-bench --bench scale_out`'s.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use locara_test_artifacts::cluster::{Cluster, McpClient};
use serde_json::json;

use crate::mcp_server::locara;

#[test]
fn three_replicas_behind_haproxy_share_the_load_and_one_stopping_loses_no_call() {
    let mut cluster = Cluster::start(locara(), 3);
    let balancer = cluster.balancer(&[0, 1, 2]);
    let (stop, answered) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
    );
    let failures = Arc::new(Mutex::new(Vec::new()));
    let reconnects = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..4)
        .map(|client| {
            let (addr, key) = (balancer.addr(), cluster.key.clone());
            let (stop, answered) = (Arc::clone(&stop), Arc::clone(&answered));
            let (failures, reconnects) = (Arc::clone(&failures), Arc::clone(&reconnects));
            std::thread::spawn(move || {
                let mut mcp = McpClient::new(&addr, &key);
                let mut n = 0;
                while !stop.load(Ordering::Acquire) {
                    n += 1;
                    // Each call's text is its own, so each answer is checked against its call.
                    let text = format!("client{client}call{n} second-chunk");
                    let answer = mcp.call("text.chunk", &json!({"text": text, "max_chars": 18}));
                    let first = answer
                        .as_ref()
                        .ok()
                        .and_then(|a| {
                            a["result"]["structuredContent"]["chunks"][0]["text"].as_str()
                        })
                        .map(str::to_owned);
                    if first.as_deref().map(str::trim) == Some(&format!("client{client}call{n}")) {
                        answered.fetch_add(1, Ordering::AcqRel);
                    } else {
                        failures.lock().unwrap().push(format!("{text}: {answer:?}"));
                    }
                }
                reconnects.fetch_add(mcp.reconnects, Ordering::AcqRel);
            })
        })
        .collect();
    let wait_for = |count: u64| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while answered.load(Ordering::Acquire) < count {
            assert!(
                Instant::now() < deadline,
                "the load stalled at {answered:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    wait_for(600);
    let before_stop: Vec<u64> = cluster
        .replicas
        .iter()
        .map(|r| r.calls().unwrap())
        .collect();
    cluster.stop(1);
    let stopped_at = answered.load(Ordering::Acquire);
    wait_for(stopped_at + 1200);
    stop.store(true, Ordering::Release);
    for client in clients {
        client.join().unwrap();
    }
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} calls failed, e.g. {:?}",
        failures.len(),
        answered.load(Ordering::Acquire),
        &failures[..failures.len().min(3)]
    );
    // The stopped replica drained and exited by itself, successfully.
    let status = cluster.wait_exit(1, Duration::from_secs(30));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    // Every replica had its share before the stop; the others carried on after it.
    assert!(
        before_stop.iter().all(|&calls| calls > 50),
        "{before_stop:?}"
    );
    for i in [0, 2] {
        let after = cluster.replicas[i].calls().unwrap();
        assert!(
            after > before_stop[i] + 300,
            "replica {i}: {before_stop:?} then {after}"
        );
    }
    eprintln!(
        "scale-out: {} calls answered, none lost; per replica before the stop {before_stop:?}; {} reconnects",
        answered.load(Ordering::Acquire),
        reconnects.load(Ordering::Acquire)
    );
}
