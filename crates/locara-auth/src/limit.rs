//! Per-caller rate limits (a token bucket) and concurrency caps.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU32, Ordering},
    },
    time::{Duration, Instant},
};

use crate::{Limits, Refusal};

#[derive(Debug, Default)]
pub(crate) struct Limiter {
    callers: Mutex<HashMap<String, Caller>>,
}

#[derive(Debug)]
struct Caller {
    /// Calls that may start now, refilled at the rate; at most a sixth of a minute's worth.
    tokens: f64,
    refilled: Instant,
    in_flight: Arc<AtomicU32>,
}

/// A call admitted: its caller's in-flight count goes down when it is dropped.
#[derive(Debug)]
pub struct Permit {
    in_flight: Arc<AtomicU32>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

fn capacity(limits: Limits) -> f64 {
    f64::from((limits.rate_per_minute / 6).max(1))
}

impl Limiter {
    pub(crate) fn admit(&self, id: &str, limits: Limits) -> Result<Permit, Refusal> {
        let now = Instant::now();
        let mut callers = self.callers.lock().unwrap_or_else(PoisonError::into_inner);
        let caller = callers.entry(id.to_owned()).or_insert_with(|| Caller {
            tokens: capacity(limits),
            refilled: now,
            in_flight: Arc::default(),
        });
        let per_second = f64::from(limits.rate_per_minute) / 60.0;
        let elapsed = now.duration_since(caller.refilled).as_secs_f64();
        caller.tokens = (caller.tokens + elapsed * per_second).min(capacity(limits));
        caller.refilled = now;
        if caller.in_flight.load(Ordering::Acquire) >= limits.max_concurrent {
            return Err(Refusal::TooManyInFlight {
                principal: id.to_owned(),
                max_concurrent: limits.max_concurrent,
            });
        }
        if caller.tokens < 1.0 {
            let wait = (1.0 - caller.tokens) / per_second;
            return Err(Refusal::RateLimited {
                principal: id.to_owned(),
                per_minute: limits.rate_per_minute,
                retry_after: Duration::from_secs_f64(wait.ceil().max(1.0)),
            });
        }
        caller.tokens -= 1.0;
        caller.in_flight.fetch_add(1, Ordering::AcqRel);
        Ok(Permit {
            in_flight: Arc::clone(&caller.in_flight),
        })
    }
}
