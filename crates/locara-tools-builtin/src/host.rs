//! The host services a tool may ask for (see `docs/tool-abi.md` § Host services): `web.fetch`
//! and `llm.chat`, through the `locara_host` imports. A request and its answer are JSON.
//!
//! Whether a call may use a service is the host's decision, made from the tool's manifest and
//! the app's grants; a refusal comes back as [`ErrorKind::BadArgs`] with the host's message
//! (a host outside the allow-list is the caller's to fix), a failure as
//! [`ErrorKind::Failed`].
//!
//! Outside a wasm guest (the unit tests on the host) there is no host to ask, and every call
//! fails saying so.

use serde_json::Value;

use crate::abi::{ErrorKind, ToolError};

/// `ENOTCAPABLE`: the host refused the request.
const ENOTCAPABLE: u16 = 76;

/// Asks host service `service`; returns its JSON answer.
///
/// # Errors
/// A refusal ([`ErrorKind::BadArgs`]) or a failure ([`ErrorKind::Failed`]), with the host's
/// message.
pub fn call(service: &str, request: &Value) -> Result<Value, ToolError> {
    let request = request.to_string();
    let (errno, answer) = raw::call(service, request.as_bytes())?;
    let text = String::from_utf8_lossy(&answer);
    match errno {
        0 => serde_json::from_slice(&answer).map_err(|e| {
            ToolError::failed(format!("the host's answer to `{service}` is not JSON: {e}"))
        }),
        ENOTCAPABLE => Err(ToolError::new(ErrorKind::BadArgs, text.into_owned())),
        _ => Err(ToolError::failed(text.into_owned())),
    }
}

#[cfg(target_os = "wasi")]
#[allow(unsafe_code, reason = "the host-service imports are raw by nature")]
mod raw {
    use crate::abi::ToolError;

    #[link(wasm_import_module = "locara_host")]
    unsafe extern "C" {
        #[link_name = "call"]
        fn host_call(
            name: *const u8,
            name_len: usize,
            request: *const u8,
            request_len: usize,
            response_len: *mut u32,
        ) -> u16;
        #[link_name = "response"]
        fn host_response(buf: *mut u8, buf_len: usize) -> u16;
    }

    /// The errno of `call` and the answer (or the message explaining the errno).
    pub(super) fn call(service: &str, request: &[u8]) -> Result<(u16, Vec<u8>), ToolError> {
        let mut len = 0u32;
        // SAFETY: the name, the request and `len` are live for the call; the host reads the
        // first two within their lengths and writes only `len`.
        let errno = unsafe {
            host_call(
                service.as_ptr(),
                service.len(),
                request.as_ptr(),
                request.len(),
                &mut len,
            )
        };
        let mut answer = vec![0u8; len as usize];
        // SAFETY: the host writes at most `answer.len()` bytes into `answer`.
        let taken = unsafe { host_response(answer.as_mut_ptr(), answer.len()) };
        if taken != 0 {
            return Err(ToolError::failed(format!(
                "the host did not hand over its answer to `{service}` (errno {taken}, after errno {errno})"
            )));
        }
        Ok((errno, answer))
    }
}

#[cfg(not(target_os = "wasi"))]
mod raw {
    use crate::abi::ToolError;

    pub(super) fn call(service: &str, _: &[u8]) -> Result<(u16, Vec<u8>), ToolError> {
        Err(ToolError::failed(format!(
            "`{service}` is a host service, available only inside the Locara sandbox"
        )))
    }
}
