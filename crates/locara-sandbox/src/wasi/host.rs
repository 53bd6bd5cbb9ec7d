//! The guest side of [`crate::services`]: the `locara_host` import module, on the same
//! engine-agnostic footing as WASI (the call's [`WasiCtx`] and the guest's memory).

use super::{Errno, Fail, Res, Stop, WasiCtx, bytes, put, put_u32};
use crate::{LimitKind, ServiceCall, ServiceError};

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
    let request = bytes(mem, request, request_len as u32)?;
    // Checked before the service runs, so a bad pointer costs no request.
    bytes(mem, response_len, 4)?;
    let service_call = ServiceCall {
        deadline: ctx.deadline,
        cancel: ctx.cancel.clone(),
    };
    let (answer, errno) = match &ctx.services {
        None => (
            format!("this call was given no host services, so `{name}` is not available")
                .into_bytes(),
            Errno::NOTCAPABLE,
        ),
        Some(services) => match services.0.call(&name, request, &service_call) {
            Ok(answer) => (answer, Errno(0)),
            Err(ServiceError::Denied(message)) => (message.into_bytes(), Errno::NOTCAPABLE),
            Err(ServiceError::Failed(message)) => (message.into_bytes(), Errno::IO),
            Err(ServiceError::DeadlineExceeded) => {
                return Err(Fail::Stop(Stop::Limit(LimitKind::WallTime)));
            }
            Err(ServiceError::Cancelled) => return Err(Fail::Stop(Stop::Cancelled)),
        },
    };
    // The deadline may have passed while the service worked, even if it answered.
    ctx.check_deadline().map_err(Fail::Stop)?;
    put_u32(mem, response_len, answer.len() as u32)?;
    ctx.pending = Some(answer);
    if errno.0 == 0 {
        Ok(())
    } else {
        Err(errno.into())
    }
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
