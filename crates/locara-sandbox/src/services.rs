//! Host services: what a guest may ask of the host beyond WASI (fetch a URL, ask the app's
//! language model), through the `locara_host` import module.
//!
//! The sandbox only carries bytes: it hands a service's name and request to the call's
//! [`HostServices`] and the answer back to the guest. Which services exist, what a request
//! means and who may make it are the host's business (in Locara, `locara-exec` decides from
//! the manifest and the app's grants).
//!
//! The guest's side, two functions in module `locara_host` (errno results, as in WASI):
//! - `call(name_ptr, name_len, request_ptr, request_len, response_len_ptr) -> errno`: asks
//!   service `name`. On `0` the answer is ready; on `76` (`ENOTCAPABLE`, the service or this
//!   request is not allowed) or `29` (`EIO`, the service failed) a UTF-8 message explaining
//!   why is ready instead. Either way its length is stored at `response_len_ptr`.
//! - `response(buf_ptr, buf_len) -> errno`: copies the ready answer or message into the
//!   guest's buffer, which must hold all of it (`68`, `ERANGE`, otherwise, and it stays
//!   ready), and forgets it. Without one it is `28` (`EINVAL`).
//!
//! A service that is still working when the call's wall-clock deadline passes, or when the
//! call is cancelled, stops the guest the same way a sleeping guest is stopped.

use std::{fmt, future::Future, pin::Pin, sync::Arc, time::Instant};

use crate::CancelToken;

/// The import module the host services are in.
pub const HOST_SERVICES_MODULE: &str = "locara_host";

/// Where a call with host services and a temp dir finds them as a stream of JSON lines, for
/// a guest that cannot import [`HOST_SERVICES_MODULE`] (a prebuilt interpreter): open it for
/// reading and writing, write `{"service": NAME, "request": JSON}` and a newline, read one line
/// back, `{"ok": ANSWER}`, `{"denied": MESSAGE}`, `{"failed": MESSAGE}` or
/// `{"invalid": MESSAGE}`; a request with `"answer": "marshal"` has a service's answer as
/// `{"marshal": N}` and N bytes of CPython's `marshal` format (docs/tool-abi.md § The host
/// channel). It is not a file: the name is intercepted when opened in the temp
/// dir (it is not listed, and a file of that name cannot be made); each open is a channel of
/// its own. Without services the name is looked up as any other (and is not there).
pub const HOST_CHANNEL_PATH: &str = "/tmp/.locara-host";

/// What a call is doing while a service answers it: the service must give up by `deadline`,
/// and should give up soon after `cancel` is cancelled.
#[derive(Debug, Clone)]
pub struct ServiceCall {
    /// When the call's wall-clock limit runs out.
    pub deadline: Instant,
    /// Cancelled when the host stops the call.
    pub cancel: CancelToken,
}

/// Why a service gave no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServiceError {
    /// The service does not exist for this call, or this request is not allowed (a host
    /// outside the allow-list); the message says which and why. The guest sees `ENOTCAPABLE`.
    Denied(String),
    /// The service failed (a server did not answer, a reply was malformed); the guest sees
    /// `EIO`.
    Failed(String),
    /// The call's deadline passed: the guest is stopped with the wall-time limit.
    DeadlineExceeded,
    /// The call was cancelled: the guest is stopped.
    Cancelled,
}

/// Answers a guest's service requests for one call. Called on the thread that runs the guest,
/// which waits for the answer.
///
/// A call's first slice may run on an async runtime's own thread, which must not block (see
/// [`crate::CompiledModule::start`]). A request made there is first offered to
/// [`HostServices::call_now`]: a service that can answer without blocking does, one that has
/// started but not finished leaves its answer to [`HostServices::wait`], and any other is
/// asked again, with [`HostServices::call`], once the call has moved to a thread that may
/// block. Answering in place spares a code-mode program's tool calls the hop to another
/// thread.
pub trait HostServices: Send + Sync {
    /// Answers request `request` (bytes, usually JSON) to service `service`, blocking this
    /// thread until the answer, the deadline or a cancel.
    fn call(
        &self,
        service: &str,
        request: &[u8],
        call: &ServiceCall,
    ) -> Result<Vec<u8>, ServiceError>;

    /// Answers `request` without blocking this thread, or starts it, or does nothing at all
    /// ([`Now::NeedsThread`], the default: the request is then made again with
    /// [`HostServices::call`]).
    fn call_now(&self, service: &str, request: &[u8], call: &ServiceCall) -> Now {
        let _ = (service, request, call);
        Now::NeedsThread
    }

    /// Waits for an answer [`HostServices::call_now`] started, as [`HostServices::call`]
    /// waits: until it is ready, the deadline or a cancel. Only reached for a service whose
    /// `call_now` returns [`Now::Started`], which must override it; the default waits for the
    /// answer alone.
    fn wait(&self, pending: PendingAnswer, call: &ServiceCall) -> Result<Vec<u8>, ServiceError> {
        let _ = call;
        crate::block_on(pending.0)
    }
}

/// What [`HostServices::call_now`] did with a request.
#[derive(Debug)]
#[non_exhaustive]
pub enum Now {
    /// It is answered (or refused).
    Answered(Result<Vec<u8>, ServiceError>),
    /// It is under way; [`HostServices::wait`] gets its answer.
    Started(PendingAnswer),
    /// Nothing was done: the request is made again where blocking is allowed.
    NeedsThread,
}

/// An answer that was started and is not ready yet. It is dropped, which cancels it, if the
/// call ends before its guest waits for it.
pub struct PendingAnswer(pub Pin<Box<dyn Future<Output = Result<Vec<u8>, ServiceError>> + Send>>);

impl fmt::Debug for PendingAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PendingAnswer(..)")
    }
}

/// The services a call may use: a shared [`HostServices`], compared by identity.
#[derive(Clone)]
pub(crate) struct Services(pub(crate) Arc<dyn HostServices>);

impl fmt::Debug for Services {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Services(..)")
    }
}

impl PartialEq for Services {
    fn eq(&self, other: &Services) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Services {}
