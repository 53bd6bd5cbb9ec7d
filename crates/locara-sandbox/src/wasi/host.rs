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
        for (slot, byte) in buf.iter_mut().zip(self.answers.drain(..n)) {
            *slot = byte;
        }
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
    let one = |kind: &str, value: serde_json::Value| {
        let mut line = serde_json::json!({ kind: value }).to_string().into_bytes();
        line.push(b'\n');
        line
    };
    let parsed = serde_json::from_slice::<serde_json::Value>(line).map_err(|e| e.to_string());
    let request = parsed.and_then(|value| match value {
        serde_json::Value::Object(mut fields) if (2..=3).contains(&fields.len()) => {
            let form = match fields.remove("answer") {
                None => Ok(Form::Json),
                Some(serde_json::Value::String(form)) if form == "json" => Ok(Form::Json),
                Some(serde_json::Value::String(form)) if form == "marshal" => Ok(Form::Marshal),
                Some(_) => Err("its `answer` is \"json\" or \"marshal\"".to_owned()),
            };
            match (fields.remove("service"), fields.remove("request"), form) {
                (_, _, Err(why)) => Err(why),
                (Some(serde_json::Value::String(service)), Some(request), Ok(form))
                    if fields.is_empty() =>
                {
                    Ok((service, request, form))
                }
                _ => Err(
                    "it needs a string `service` and a `request`, and may have an `answer`"
                        .to_owned(),
                ),
            }
        }
        _ => Err("it is not an object of two or three fields".to_owned()),
    });
    let (service, request, form) = match request {
        Ok(request) => request,
        Err(why) => {
            let message = format!(
                "a request is one line of JSON, {{\"service\": NAME, \"request\": JSON, \"answer\"?: \"json\" | \"marshal\"}}: {why}"
            );
            return Ok(one("invalid", message.into()));
        }
    };
    let body = serde_json::to_vec(&request).map_err(|_| Errno::INVAL)?;
    let (answer, errno) = ask(ctx, &service, body)?;
    let message = || serde_json::Value::String(String::from_utf8_lossy(&answer).into_owned());
    Ok(match errno {
        Errno(0) => {
            let value = serde_json::from_slice(&answer).unwrap_or_else(|_| message());
            match form {
                Form::Json => one("ok", value),
                Form::Marshal => {
                    let bytes = super::marshal::to_marshal(&value);
                    let mut answer = one("marshal", bytes.len().into());
                    answer.extend_from_slice(&bytes);
                    answer
                }
            }
        }
        Errno::NOTCAPABLE => one("denied", message()),
        _ => one("failed", message()),
    })
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
    #[test]
    fn the_channel_is_named_in_the_temp_dir() {
        assert_eq!(
            crate::services::HOST_CHANNEL_PATH,
            format!("{}/{}", crate::TEMP_GUEST_PATH, super::CHANNEL_NAME)
        );
    }
}
