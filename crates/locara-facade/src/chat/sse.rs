//! Server-sent events, read as the bytes arrive: `event:` and `data:` lines, an event per blank
//! line (the WHATWG `text/event-stream` rules, without `id:` and `retry:`, which a chat
//! completion does not use).

/// One event: its name (empty when the stream names none) and its data lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) name: String,
    pub(crate) data: String,
}

/// Turns pieces of a stream into events.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// Bytes of a line not yet ended.
    partial: Vec<u8>,
    name: String,
    data: Option<String>,
}

impl Decoder {
    /// Feeds `bytes`, handing each complete event to `on_event`.
    pub(crate) fn feed(&mut self, bytes: &[u8], on_event: &mut dyn FnMut(Event)) {
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            self.partial.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            let mut line = std::mem::take(&mut self.partial);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.line(&String::from_utf8_lossy(&line), on_event);
        }
        self.partial.extend_from_slice(rest);
    }

    /// Ends the stream: an event not followed by a blank line is still handed over.
    pub(crate) fn finish(&mut self, on_event: &mut dyn FnMut(Event)) {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line(&String::from_utf8_lossy(&line), on_event);
        }
        self.dispatch(on_event);
    }

    fn line(&mut self, line: &str, on_event: &mut dyn FnMut(Event)) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line.starts_with(':') {
            return; // A comment (keep-alive).
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.name),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
    }

    fn dispatch(&mut self, on_event: &mut dyn FnMut(Event)) {
        let name = std::mem::take(&mut self.name);
        if let Some(data) = self.data.take() {
            on_event(Event { name, data });
        }
    }
}
