//! The progress line: a tool's progress reports drawn on one line of stderr, redrawn in place,
//! when stderr is a terminal (and nothing otherwise, so logs and pipes stay clean).

use std::{
    io::{IsTerminal as _, Write as _},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use locara_facade::{Progress, ProgressEvent, ProgressSink};

/// How often the line is redrawn at most (a task's start and end are always drawn).
const REDRAW: Duration = Duration::from_millis(100);

/// The line, while a call runs.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    drawn: bool,
    last: Option<Instant>,
}

impl Line {
    /// A line on stderr, or `None` when stderr is not a terminal.
    pub(crate) fn on_stderr() -> Option<Line> {
        std::io::stderr().is_terminal().then(|| Line {
            state: Arc::new(Mutex::new(State {
                drawn: false,
                last: None,
            })),
        })
    }

    /// The sink the call reports to.
    pub(crate) fn sink(&self) -> ProgressSink {
        let line = self.clone();
        Arc::new(move |progress: &Progress| line.draw(progress))
    }

    fn draw(&self, progress: &Progress) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let always = !matches!(progress.event, ProgressEvent::Step { .. });
        if !always && state.last.is_some_and(|last| last.elapsed() < REDRAW) {
            return;
        }
        state.last = Some(Instant::now());
        state.drawn = true;
        let text = render(progress);
        let mut stderr = std::io::stderr().lock();
        // Carriage return and "erase line": the line is redrawn in place.
        let _ = write!(stderr, "\r\x1b[2K{text}");
        let _ = stderr.flush();
    }

    /// Erases the line, so what follows starts on a clean one.
    pub(crate) fn clear(&self) {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.drawn {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[2K");
            let _ = stderr.flush();
        }
    }
}

/// `tool: title 3/47 (message)`, cut to fit a terminal line.
fn render(progress: &Progress) -> String {
    let tool = progress.tool.split('@').next().unwrap_or(&progress.tool);
    let title = &progress.title;
    let text = match &progress.event {
        ProgressEvent::Started { total: Some(total) } => format!("{tool}: {title} 0/{total}"),
        ProgressEvent::Started { total: None } => format!("{tool}: {title}…"),
        ProgressEvent::Step {
            done,
            total,
            message,
        } => {
            let count = match total {
                Some(total) => format!("{done}/{total}"),
                None => done.to_string(),
            };
            match message {
                Some(message) => format!("{tool}: {title} {count} ({message})"),
                None => format!("{tool}: {title} {count}"),
            }
        }
        ProgressEvent::Done { summary, .. } => match summary {
            Some(summary) => format!("{tool}: {title}: {summary}"),
            None => format!("{tool}: {title}: done"),
        },
        _ => format!("{tool}: {title}"),
    };
    // Keep to one line of a narrow terminal, and never a control character from a tool.
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(100)
        .collect()
}

#[cfg(test)]
mod tests {
    use locara_facade::{Progress, ProgressEvent};

    use super::render;

    #[test]
    fn a_report_is_one_line_without_control_characters() {
        let progress = |event| Progress::new("ocr@0.1.0", 1, "Reading lines", event);
        assert_eq!(
            render(&progress(ProgressEvent::Step {
                done: 3,
                total: Some(47),
                message: Some("line\r\n3\x1b[2K".to_owned()),
            })),
            "ocr: Reading lines 3/47 (line  3 [2K)"
        );
        assert_eq!(
            render(&progress(ProgressEvent::Done {
                done: 47,
                summary: None
            })),
            "ocr: Reading lines: done"
        );
        let long = render(&progress(ProgressEvent::Started { total: None }));
        assert_eq!(long, "ocr: Reading lines…");
    }
}
