//! Tell the person or client waiting on a long call how it is going (the host's `progress`
//! service; `docs/tool-abi.md` § Host services).
//!
//! ```no_run
//! let pages = 12;
//! let task = locara_pdk::progress::Task::start("Reading pages", Some(pages));
//! for page in 0..pages {
//!     // ... read page ...
//!     task.step(Some(&format!("page {}", page + 1)));
//! }
//! task.done(Some("12 pages read"));
//! ```
//!
//! The tool lists `progress` in its manifest's `capability_requirements`. Progress is
//! information, never a reason to fail: when the app did not grant it, nobody is listening or
//! the tool runs outside the sandbox (its unit tests), every function here quietly does
//! nothing, so a tool never checks. Reports cost a host call each (microseconds); a tool
//! reports at most a few per second of work, not per byte.

use serde_json::{Value, json};

use crate::host;

/// A task the tool started: a title and, when known, how many steps it takes.
#[derive(Debug)]
pub struct Task {
    /// The host's number for it; `None` when the host is not listening.
    id: Option<u64>,
}

impl Task {
    /// Starts a task named `title` (a few words, e.g. "Recognising lines") that takes
    /// `total` steps, when the tool knows.
    pub fn start(title: &str, total: Option<u64>) -> Task {
        let id = report(&json!({"op": "start", "title": title, "total": total}))
            .and_then(|answer| answer["task"].as_u64());
        Task { id }
    }

    /// Advances the task by one step; `message` says what the step was (e.g. "line 3 of 47").
    pub fn step(&self, message: Option<&str>) {
        self.advance(1, message);
    }

    /// Advances the task by `by` steps.
    pub fn advance(&self, by: u64, message: Option<&str>) {
        if let Some(id) = self.id {
            report(&json!({"op": "step", "task": id, "by": by, "message": message}));
        }
    }

    /// Ends the task; `summary` says what it did.
    pub fn done(self, summary: Option<&str>) {
        if let Some(id) = self.id {
            report(&json!({"op": "done", "task": id, "summary": summary}));
        }
    }
}

/// Sends one report; `None` when nobody takes it.
fn report(request: &Value) -> Option<Value> {
    host::call("progress", request).ok()
}
