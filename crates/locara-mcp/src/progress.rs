//! A tool's progress reports as MCP `notifications/progress`, for a `tools/call` whose request
//! carried a `progressToken`.
//!
//! The facade hands each report ([`Progress`]) to a sink on the thread that runs the tool; the
//! sink only puts it in a bounded channel (dropping it when the channel is full, so a tool
//! reporting faster than the client reads never waits nor grows the host's memory), and the
//! handler's own future turns what it reads into notifications while the call runs. Rmcp ties a
//! notification to its request through a task-local, so they are sent from the handler's task,
//! never a spawned one. Once the call has ended the channel is closed and drained before the
//! result is returned: every notification of a call comes before its response.
//!
//! MCP wants `progress` to increase with every notification, even when the total is unknown.
//! [`Tally`] counts in units: a step is one unit (a report that advanced `k` steps at once,
//! `k`), and a report that advanced no step (a task started, a task done, an empty step) is one
//! unit too. `total` is what the tasks still open will add if each steps to its total and then
//! ends, on top of the progress so far; unknown while an open task has no total, and equal to
//! the progress once every task has ended.

use std::{collections::BTreeMap, future::Future, sync::Arc};

use locara_facade::{Progress, ProgressEvent, ProgressSink};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use tokio::sync::{mpsc, oneshot};

/// How many reports may wait for the client before new ones are dropped.
const BACKLOG: usize = 1024;

/// One notification's numbers and text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Notice {
    /// Units done in the whole call (strictly increasing).
    pub(crate) progress: u64,
    /// Units the call will have done when its open tasks end, when every one has a total.
    pub(crate) total: Option<u64>,
    /// The task's title and what the report says.
    pub(crate) message: String,
}

impl Notice {
    /// The notification's parameters for the request that sent `token`.
    pub(crate) fn into_param(self, token: ProgressToken) -> ProgressNotificationParam {
        // Integers up to 2^53 are exact in an f64; a call never counts that far.
        let mut param =
            ProgressNotificationParam::new(token, self.progress as f64).with_message(self.message);
        param.total = self.total.map(|total| total as f64);
        param
    }
}

/// A call's progress so far, across all its tasks.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    progress: u64,
    tasks: BTreeMap<u32, Task>,
}

#[derive(Debug, Default)]
struct Task {
    done: u64,
    total: Option<u64>,
    finished: bool,
}

impl Tally {
    /// Counts one report of task `task`, titled `title`, and says what to tell the client.
    pub(crate) fn note(&mut self, task: u32, title: &str, event: &ProgressEvent) -> Notice {
        let state = self.tasks.entry(task).or_default();
        let (advanced, message) = match event {
            ProgressEvent::Started { total } => {
                state.total = *total;
                (0, title.to_owned())
            }
            ProgressEvent::Step {
                done,
                total,
                message,
            } => {
                let advanced = done.saturating_sub(state.done);
                state.done = state.done.max(*done);
                state.total = total.or(state.total);
                let message = match (message, total) {
                    (Some(message), _) => format!("{title}: {message}"),
                    (None, Some(total)) => format!("{title}: {done} of {total}"),
                    (None, None) => format!("{title}: {done}"),
                };
                (advanced, message)
            }
            ProgressEvent::Done { done, summary } => {
                let advanced = done.saturating_sub(state.done);
                state.done = state.done.max(*done);
                state.finished = true;
                let message = match summary {
                    Some(summary) => format!("{title}: {summary}"),
                    None => format!("{title}: done"),
                };
                (advanced, message)
            }
            _ => (0, title.to_owned()),
        };
        self.progress = self.progress.saturating_add(advanced.max(1));
        Notice {
            progress: self.progress,
            total: self.total(),
            message,
        }
    }

    /// The progress so far plus what the open tasks will add: their remaining steps and one
    /// unit each for ending.
    fn total(&self) -> Option<u64> {
        self.tasks
            .values()
            .filter(|task| !task.finished)
            .try_fold(self.progress, |sum, task| {
                let remaining = task.total?.saturating_sub(task.done);
                Some(sum.saturating_add(remaining).saturating_add(1))
            })
    }
}

/// Runs `run` with a progress sink, calling `send` (and awaiting it) for each report's
/// [`Notice`] while `run` goes on, and for every report still waiting once it has ended;
/// returns `run`'s output after the last `send`.
pub(crate) async fn forwarding<R, S, F>(
    run: impl FnOnce(ProgressSink) -> R,
    mut send: S,
) -> R::Output
where
    R: Future,
    S: FnMut(Notice) -> F,
    F: Future<Output = ()>,
{
    let (reports, mut received) = mpsc::channel::<Progress>(BACKLOG);
    let sink: ProgressSink = Arc::new(move |progress: &Progress| {
        if reports.try_send(progress.clone()).is_err() {
            tracing::trace!(
                task = progress.task,
                "progress report dropped: the client is behind"
            );
        }
    });
    let (ended, mut has_ended) = oneshot::channel::<()>();
    let run = run(sink);
    let running = async move {
        let output = run.await;
        let _ = ended.send(());
        output
    };
    let forward = async move {
        let mut tally = Tally::default();
        loop {
            tokio::select! {
                biased;
                report = received.recv() => match report {
                    Some(p) => send(tally.note(p.task, &p.title, &p.event)).await,
                    None => return,
                },
                _ = &mut has_ended => break,
            }
        }
        // The call has ended: refuse later reports, and send those already queued.
        received.close();
        while let Some(p) = received.recv().await {
            send(tally.note(p.task, &p.title, &p.event)).await;
        }
    };
    let (output, ()) = tokio::join!(running, forward);
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(done: u64, total: Option<u64>) -> ProgressEvent {
        ProgressEvent::Step {
            done,
            total,
            message: None,
        }
    }

    /// `(progress, total, message)` of each report in turn.
    fn tally(reports: &[(u32, &str, ProgressEvent)]) -> Vec<(u64, Option<u64>, String)> {
        let mut tally = Tally::default();
        reports
            .iter()
            .map(|(task, title, event)| {
                let n = tally.note(*task, title, event);
                (n.progress, n.total, n.message)
            })
            .collect()
    }

    #[test]
    fn two_tasks_in_turn_count_up_to_their_total() {
        let seen = tally(&[
            (1, "Finding text", ProgressEvent::Started { total: None }),
            (
                1,
                "Finding text",
                ProgressEvent::Done {
                    done: 0,
                    summary: Some("3 text boxes".into()),
                },
            ),
            (
                2,
                "Reading lines",
                ProgressEvent::Started { total: Some(3) },
            ),
            (2, "Reading lines", step(1, Some(3))),
            (
                2,
                "Reading lines",
                ProgressEvent::Step {
                    done: 2,
                    total: Some(3),
                    message: Some("line 2".into()),
                },
            ),
            (2, "Reading lines", step(3, Some(3))),
            (
                2,
                "Reading lines",
                ProgressEvent::Done {
                    done: 3,
                    summary: None,
                },
            ),
        ]);
        let expected = [
            (1, None, "Finding text"),
            (2, Some(2), "Finding text: 3 text boxes"),
            (3, Some(7), "Reading lines"),
            (4, Some(7), "Reading lines: 1 of 3"),
            (5, Some(7), "Reading lines: line 2"),
            (6, Some(7), "Reading lines: 3 of 3"),
            (7, Some(7), "Reading lines: done"),
        ]
        .map(|(p, t, m)| (p, t, m.to_owned()));
        assert_eq!(seen, expected);
    }

    #[test]
    fn progress_increases_with_overlapping_tasks_big_steps_and_overshoot() {
        let seen = tally(&[
            (1, "a", ProgressEvent::Started { total: Some(10) }),
            (2, "b", ProgressEvent::Started { total: None }),
            (1, "a", step(4, Some(10))),
            (2, "b", step(1, None)),
            (1, "a", step(4, Some(10))),
            (1, "a", step(12, Some(10))),
            (
                1,
                "a",
                ProgressEvent::Done {
                    done: 12,
                    summary: None,
                },
            ),
            (
                2,
                "b",
                ProgressEvent::Done {
                    done: 1,
                    summary: None,
                },
            ),
        ]);
        let progress: Vec<u64> = seen.iter().map(|s| s.0).collect();
        assert_eq!(progress, [1, 2, 6, 7, 8, 16, 17, 18]);
        // Unknown while `b` is open with no total; never below the progress otherwise.
        assert_eq!(seen[0].1, Some(12));
        assert!(seen[1..7].iter().all(|s| s.1.is_none()), "{seen:?}");
        assert_eq!(seen[7].1, Some(18));
    }
}
