//! The guest side of [`crate::services`]: the `locara_host` import module, on the same
//! engine-agnostic footing as WASI (the call's [`WasiCtx`] and the guest's memory), and the
//! same services as a stream of JSON lines at [`crate::services::HOST_CHANNEL_PATH`] for
//! guests that cannot import a function (a prebuilt interpreter; see [`Channel`]).

use super::{Desc, Errno, Fail, Res, Stop, WasiCtx, bytes, put, put_u32};
use std::sync::Arc;

use crate::{LimitKind, Now, ServiceCall, ServiceError, backend::MayBlock};

pub(crate) use crate::services::HOST_SERVICES_MODULE as MODULE;

/// `ERANGE`: the guest's buffer cannot hold the answer.
const RANGE: Errno = Errno(68);

/// Calls `$m!(name(arg: type, ...))` for every function in [`MODULE`].
macro_rules! for_each_host_function {
    ($m:ident) => {
        $m!(call(a: i32, b: i32, c: i32, d: i32, e: i32));
        $m!(response(a: i32, b: i32));
    };
}
pub(crate) use for_each_host_function;

/// Whether `name` is a function of [`MODULE`].
pub(crate) fn provides(name: &str) -> bool {
    macro_rules! is {
        ($f:ident($($arg:ident: $ty:ty),*)) => {
            if name == stringify!($f) {
                return true;
            }
        };
    }
    for_each_host_function!(is);
    false
}

/// `call(name, name_len, request, request_len, response_len_out)`: asks a service.
pub(crate) fn call(
    ctx: &mut WasiCtx,
    mem: &mut [u8],
    name: i32,
    name_len: i32,
    request: i32,
    request_len: i32,
    response_len: i32,
) -> Res {
    let name = std::str::from_utf8(bytes(mem, name, name_len as u32)?)
        .map_err(|_| Errno::ILSEQ)?
        .to_owned();
    let request = bytes(mem, request, request_len as u32)?.to_vec();
    // Checked before the service runs, so a bad pointer costs no request.
    bytes(mem, response_len, 4)?;
    let (answer, errno) = ask(ctx, &name, request)?;
    put_u32(mem, response_len, answer.len() as u32)?;
    ctx.pending = Some(answer);
    if errno.0 == 0 {
        Ok(())
    } else {
        Err(errno.into())
    }
}

/// Asks service `name`: its answer and `0`, or a message saying why not and the errno the
/// guest sees (`ENOTCAPABLE` denied, `EIO` failed). A deadline or cancellation stops the guest.
///
/// On a thread that must not block ([`WasiCtx::in_place`]) the request is offered to
/// [`HostServices::call_now`](crate::HostServices::call_now) within [`crate::IN_PLACE`] of the
/// call's start; if the service cannot answer at once the request is declined
/// ([`WasiCtx::declined`], with any answer it started parked) and the host function is run
/// again where it may block, where this finds the parked answer and waits for it.
fn ask(ctx: &mut WasiCtx, name: &str, request: Vec<u8>) -> Res<(Vec<u8>, Errno)> {
    let service_call = ServiceCall {
        deadline: ctx.deadline,
        cancel: ctx.cancel.clone(),
    };
    let Some(services) = ctx.services.as_ref().map(|s| Arc::clone(&s.0)) else {
        let message = format!("this call was given no host services, so `{name}` is not available");
        return Ok((message.into_bytes(), Errno::NOTCAPABLE));
    };
    // A service may poll an inner call here; that call's host functions must not block this
    // thread again, whatever this one may do.
    let result = {
        let _may_not_block = MayBlock::here(false);
        if let Some(pending) = ctx.parked.take() {
            services.wait(pending, &service_call)
        } else if ctx.in_place {
            let now = if ctx.start.elapsed() < crate::IN_PLACE {
                services.call_now(name, &request, &service_call)
            } else {
                Now::NeedsThread
            };
            match now {
                Now::Answered(result) => result,
                Now::Started(pending) => {
                    ctx.parked = Some(pending);
                    ctx.declined = true;
                    return Err(Errno::AGAIN.into());
                }
                Now::NeedsThread => {
                    ctx.declined = true;
                    return Err(Errno::AGAIN.into());
                }
            }
        } else {
            services.call(name, &request, &service_call)
        }
    };
    let answer = match result {
        Ok(answer) => (answer, Errno(0)),
        Err(ServiceError::Denied(message)) => (message.into_bytes(), Errno::NOTCAPABLE),
        Err(ServiceError::Failed(message)) => (message.into_bytes(), Errno::IO),
        Err(ServiceError::DeadlineExceeded) => {
            return Err(Fail::Stop(Stop::Limit(LimitKind::WallTime)));
        }
        Err(ServiceError::Cancelled) => return Err(Fail::Stop(Stop::Cancelled)),
    };
    // The deadline may have passed while the service worked, even if it answered.
    ctx.check_deadline().map_err(Fail::Stop)?;
    Ok(answer)
}

/// The channel's name in the temp dir: [`crate::services::HOST_CHANNEL_PATH`] without `/tmp/`.
pub(crate) const CHANNEL_NAME: &str = ".locara-host";

/// The longest request line the channel holds while waiting for its end: a longer one is
/// refused with `EFBIG` and dropped.
const MAX_CHANNEL_REQUEST: usize = 8 << 20;

/// The host services as a stream, for guests that can only read and write descriptors.
///
/// The guest writes one request per line, `{"service": NAME, "request": JSON}`, and reads one
/// answer line per request, in order: `{"ok": ANSWER}`, `{"denied": MESSAGE}`,
/// `{"failed": MESSAGE}`, or `{"invalid": MESSAGE}` for a line that is not such a request. A
/// request may add `"answer": "marshal"`: an answer is then `{"marshal": N}` and N bytes of
/// the answer in CPython's `marshal` format ([`super::marshal`]).
/// A request is answered when its line ends, before the write returns, so the answer is there
/// to read; a read with nothing to read returns 0 bytes. Deadlines and cancellation stop the
/// guest as [`call`] does.
#[derive(Debug, Default)]
pub(crate) struct Channel {
    /// The start of a request whose line has not ended yet.
    request: Vec<u8>,
    /// Answers not read yet.
    answers: std::collections::VecDeque<u8>,
    /// The request lines of a write whose answering was declined in place (see [`ask`]), from
    /// the declined one on: the write's second run answers them instead of taking its data
    /// again.
    unanswered: Option<std::collections::VecDeque<Vec<u8>>>,
}

impl Channel {
    /// Copies answer bytes into `buf`; how many.
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> usize {
        let n = buf.len().min(self.answers.len());
        let (front, back) = self.answers.as_slices();
        let from_front = n.min(front.len());
        buf[..from_front].copy_from_slice(&front[..from_front]);
        buf[from_front..n].copy_from_slice(&back[..n - from_front]);
        self.answers.drain(..n);
        n
    }
}

/// A write to the channel at `fd`: answers every request line it ends.
///
/// Run a second time for the same write when a request was declined in place (see [`ask`]):
/// it then answers the lines left from the first run and takes no data.
pub(crate) fn channel_write(ctx: &mut WasiCtx, fd: i32, data: &[u8]) -> Res<()> {
    let Desc::Channel(channel) = ctx.desc(fd)? else {
        return Err(Errno::BADF.into());
    };
    let mut lines = match channel.unanswered.take() {
        Some(lines) => lines,
        None => {
            channel.request.extend_from_slice(data);
            let mut lines = std::collections::VecDeque::new();
            while let Some(end) = channel.request.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = channel.request.drain(..=end).collect();
                line.pop();
                lines.push_back(line);
            }
            if channel.request.len() > MAX_CHANNEL_REQUEST {
                channel.request = Vec::new();
                return Err(Errno::FBIG.into());
            }
            lines
        }
    };
    while let Some(line) = lines.front() {
        let answer = answer_line(ctx, line);
        let declined = ctx.declined;
        let Desc::Channel(channel) = ctx.desc(fd)? else {
            return Err(Errno::BADF.into());
        };
        if declined {
            channel.unanswered = Some(lines);
            return answer.map(drop);
        }
        channel.answers.extend(answer?);
        lines.pop_front();
    }
    Ok(())
}

/// The answer (a line, with its newline, and for `marshal` the bytes after it) to one request
/// line.
fn answer_line(ctx: &mut WasiCtx, line: &[u8]) -> Res<Vec<u8>> {
    let (service, body, form) = match request_of(line) {
        Ok(request) => request,
        Err(why) => {
            let message = format!(
                "a request is one line of JSON, {{\"service\": NAME, \"request\": JSON, \"answer\"?: \"json\" | \"marshal\"}}: {why}"
            );
            return Ok(one_line("invalid", &serde_json::Value::from(message)));
        }
    };
    let (answer, errno) = ask(ctx, &service, body)?;
    Ok(match (errno, form) {
        (Errno(0), Form::Json) => ok_answer(&answer),
        (Errno(0), Form::Marshal) => {
            let bytes = super::marshal::json_to_marshal(&answer);
            let mut answer = one_line("marshal", &bytes.len().into());
            answer.extend_from_slice(&bytes);
            answer
        }
        (Errno::NOTCAPABLE, _) => one_line("denied", &text_value(&answer)),
        _ => one_line("failed", &text_value(&answer)),
    })
}

/// A service's answer as a value: its JSON, or its text when it is not JSON.
fn answer_value(answer: &[u8]) -> serde_json::Value {
    serde_json::from_slice(answer).unwrap_or_else(|_| text_value(answer))
}

/// Bytes as a JSON string (invalid UTF-8 replaced).
fn text_value(bytes: &[u8]) -> serde_json::Value {
    serde_json::Value::String(String::from_utf8_lossy(bytes).into_owned())
}

/// `{"KIND": VALUE}` and a newline.
fn one_line(kind: &str, value: &serde_json::Value) -> Vec<u8> {
    let mut line = serde_json::json!({ kind: value }).to_string().into_bytes();
    line.push(b'\n');
    line
}

/// `{"ok": ANSWER}` and a newline. A service's answer is usually compact JSON text, copied as it
/// is (checked to be JSON, not parsed into values and written again); an answer on many lines
/// is written compact, and one that is not JSON as a string.
fn ok_answer(answer: &[u8]) -> Vec<u8> {
    if answer.contains(&b'\n') || serde_json::from_slice::<serde::de::IgnoredAny>(answer).is_err() {
        return one_line("ok", &answer_value(answer));
    }
    let mut line = Vec::with_capacity(answer.len() + 8);
    line.extend_from_slice(b"{\"ok\":");
    line.extend_from_slice(answer);
    line.extend_from_slice(b"}\n");
    line
}

/// A request line, borrowed: its `request` is the JSON text it was sent as.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestLine<'a> {
    #[serde(borrow)]
    service: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    request: &'a serde_json::value::RawValue,
    #[serde(borrow, default)]
    answer: Present<'a>,
}

/// A member that may be missing, taken as it is when there (`null` included, which an
/// `Option` would take for a missing one).
#[derive(Default)]
struct Present<'a>(Option<&'a serde_json::value::RawValue>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Present<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&serde_json::value::RawValue>::deserialize(d).map(|raw| Present(Some(raw)))
    }
}

/// The service a request line names, the JSON text of its request, and the form of answer it
/// wants; or why the line is not a request.
///
/// A well-formed line is read without building its JSON as values, and its request goes on
/// as the text it came in (the service reads it; nothing here needs it as values). Any other
/// line is read as values, to say what is wrong with it.
fn request_of(line: &[u8]) -> Result<(String, Vec<u8>, Form), String> {
    if let Ok(request) = serde_json::from_slice::<RequestLine<'_>>(line) {
        let form = match request.answer.0.map(serde_json::value::RawValue::get) {
            None | Some("\"json\"") => Some(Form::Json),
            Some("\"marshal\"") => Some(Form::Marshal),
            Some(_) => None,
        };
        if let Some(form) = form {
            let body = request.request.get().as_bytes().to_vec();
            return Ok((request.service.into_owned(), body, form));
        }
    }
    let value = serde_json::from_slice::<serde_json::Value>(line).map_err(|e| e.to_string())?;
    let serde_json::Value::Object(mut fields) = value else {
        return Err("it is not an object of two or three fields".to_owned());
    };
    if !(2..=3).contains(&fields.len()) {
        return Err("it is not an object of two or three fields".to_owned());
    }
    let form = match fields.remove("answer") {
        None => Form::Json,
        Some(serde_json::Value::String(form)) if form == "json" => Form::Json,
        Some(serde_json::Value::String(form)) if form == "marshal" => Form::Marshal,
        Some(_) => return Err("its `answer` is \"json\" or \"marshal\"".to_owned()),
    };
    match (fields.remove("service"), fields.remove("request")) {
        (Some(serde_json::Value::String(service)), Some(request)) if fields.is_empty() => {
            let body = serde_json::to_vec(&request).map_err(|e| e.to_string())?;
            Ok((service, body, form))
        }
        _ => {
            Err("it needs a string `service` and a `request`, and may have an `answer`".to_owned())
        }
    }
}

/// How a channel request wants a service's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `{"ok": ANSWER}` on one line.
    Json,
    /// `{"marshal": N}` on one line, then the answer in N bytes of CPython's `marshal` format,
    /// which CPython reads in C, without its JSON scanner.
    Marshal,
}

/// `response(buf, buf_len)`: copies the ready answer into the guest's buffer.
pub(crate) fn response(ctx: &mut WasiCtx, mem: &mut [u8], buf: i32, buf_len: i32) -> Res {
    let Some(answer) = &ctx.pending else {
        return Err(Errno::INVAL.into());
    };
    if (buf_len as u32 as usize) < answer.len() {
        return Err(RANGE.into());
    }
    put(mem, buf, answer)?;
    ctx.pending = None;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Channel, Form, ok_answer, request_of};
    use serde_json::{Value, json};

    /// What `request_of` makes of `line`, with the body as text.
    fn read(line: &str) -> Result<(String, String, Form), String> {
        request_of(line.as_bytes())
            .map(|(service, body, form)| (service, String::from_utf8(body).unwrap(), form))
    }

    #[test]
    fn a_request_goes_on_as_the_text_it_came_in() {
        let line = r#"{"service": "tools", "request": {"op": "call", "arguments": {"b": 1, "a": [1.50, "x"]}}}"#;
        assert_eq!(
            read(line).unwrap(),
            (
                "tools".to_owned(),
                r#"{"op": "call", "arguments": {"b": 1, "a": [1.50, "x"]}}"#.to_owned(),
                Form::Json
            )
        );
        let line = r#"{"answer": "marshal", "request": null, "service": "pro\u0067ress"}"#;
        assert_eq!(
            read(line).unwrap(),
            ("progress".to_owned(), "null".to_owned(), Form::Marshal)
        );
        let line = r#"{"service": "kv", "request": [], "answer": "json"}"#;
        assert_eq!(
            read(line).unwrap(),
            ("kv".to_owned(), "[]".to_owned(), Form::Json)
        );
        // A repeated member is read as values, as before: the last one counts.
        let line = r#"{"service": "a", "service": "kv", "request": {"k": 1}}"#;
        assert_eq!(
            read(line).unwrap(),
            ("kv".to_owned(), r#"{"k":1}"#.to_owned(), Form::Json)
        );
    }

    #[test]
    fn a_line_that_is_not_a_request_says_why() {
        let why = |line: &str| read(line).unwrap_err();
        assert!(why("not json").contains("expected"), "{}", why("not json"));
        let (shape, members) = (
            "it is not an object of two or three fields",
            "it needs a string `service` and a `request`, and may have an `answer`",
        );
        let answer = r#"its `answer` is "json" or "marshal""#;
        for (line, expected) in [
            (r#"[1, 2]"#, shape),
            (r#"{"service": "kv"}"#, shape),
            (r#"{"a": 1, "b": 2, "c": 3, "d": 4}"#, shape),
            (r#"{"service": 1, "request": {}}"#, members),
            (r#"{"service": "kv", "req": {}}"#, members),
            (r#"{"service": "kv", "request": {}, "extra": 1}"#, members),
            (
                r#"{"service": "kv", "request": {}, "answer": "xml"}"#,
                answer,
            ),
            (
                r#"{"service": "kv", "request": {}, "answer": null}"#,
                answer,
            ),
            (
                r#"{"service": "kv", "request": {}, "answer": ["json"]}"#,
                answer,
            ),
        ] {
            assert_eq!(why(line), expected, "{line}");
        }
    }

    #[test]
    fn an_answer_is_one_line_whatever_the_service_wrote() {
        let line = |answer: &[u8]| {
            let line = ok_answer(answer);
            assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
            assert_eq!(line.last(), Some(&b'\n'));
            String::from_utf8(line).unwrap()
        };
        // Compact JSON is copied as it is, its members in their order.
        assert_eq!(
            line(br#"{"tool":"t","ok":true,"output":{"z":1,"a":"\u00e9\n"}}"#),
            "{\"ok\":{\"tool\":\"t\",\"ok\":true,\"output\":{\"z\":1,\"a\":\"\\u00e9\\n\"}}}\n"
        );
        // JSON on many lines is written compact, anything else as a string.
        let pretty = serde_json::to_vec_pretty(&json!({"a": [1, 2], "b": "c"})).unwrap();
        let value: Value = serde_json::from_str(&line(&pretty)).unwrap();
        assert_eq!(value, json!({"ok": {"a": [1, 2], "b": "c"}}));
        for answer in [&b"not json"[..], b"{\"a\": 1} trailing", b"", b"\xff\xfe"] {
            let value: Value = serde_json::from_str(&line(answer)).unwrap();
            assert_eq!(
                value,
                json!({"ok": String::from_utf8_lossy(answer)}),
                "{answer:?}"
            );
        }
    }

    #[test]
    fn answers_are_read_in_order_across_reads() {
        let mut channel = Channel::default();
        let mut buf = [0u8; 5];
        channel.answers.extend(b"abcdefg");
        assert_eq!(channel.read(&mut buf), 5);
        assert_eq!(&buf, b"abcde");
        // The queue wraps around its buffer: the next read takes from both of its halves.
        channel.answers.extend(b"hijkl");
        assert_eq!(channel.read(&mut buf), 5);
        assert_eq!(&buf, b"fghij");
        assert_eq!(channel.read(&mut buf), 2);
        assert_eq!(&buf[..2], b"kl");
        assert_eq!(channel.read(&mut buf), 0);
    }

    #[test]
    fn the_channel_is_named_in_the_temp_dir() {
        assert_eq!(
            crate::services::HOST_CHANNEL_PATH,
            format!("{}/{}", crate::TEMP_GUEST_PATH, super::CHANNEL_NAME)
        );
    }
}
