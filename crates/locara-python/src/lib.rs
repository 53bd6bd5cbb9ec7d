//! `locara._locara`, the native half of the `locara` Python package: Python values in and out
//! of [`locara_sdk::Sdk`], calls driven on one Tokio runtime per process with the GIL
//! released.
//!
//! It knows how Python values map to JSON (a `bytes`, `bytearray`, `os.PathLike` or file object
//! in a call's arguments is a file, sent as its bytes), how to block a Python thread on a call
//! without holding the GIL, and how to finish an asyncio future from a runtime thread (the
//! Python half passes a callback that hands the result to its event loop). It deliberately
//! knows nothing of the tools, the exception classes or the attribute-style `tools` API: those
//! are `python/locara/__init__.py`, and running a call is the facade's.

use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use locara_facade::{RunRequest, RunResponse};
use locara_sdk::Sdk;
use pyo3::{
    create_exception,
    exceptions::{PyException, PyTypeError, PyValueError},
    prelude::*,
    types::{PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple},
};
use serde_json::{Map, Number, Value};

create_exception!(
    _locara,
    Failure,
    PyException,
    "A call that could not run; its one argument is the error report (a dict)."
);

/// How deep a Python value may nest before it is refused (a list that holds itself).
const MAX_DEPTH: usize = 128;

/// The process's runtime: every call of every `Core` runs on it.
fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_name("locara")
        .enable_all()
        .build()
        .map_err(|e| PyException::new_err(format!("cannot start Locara's runtime: {e}")))?;
    Ok(RUNTIME.get_or_init(|| runtime))
}

/// Whether a value is a call's arguments (where paths and file objects are files) or plain
/// options (where a path is its text).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Arguments,
    Options,
}

fn file(bytes: &[u8]) -> Value {
    let mut object = Map::new();
    object.insert(
        "base64".to_owned(),
        Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
    );
    Value::Object(object)
}

/// `value` as JSON.
fn to_json(value: &Bound<'_, PyAny>, mode: Mode, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "the value nests deeper than {MAX_DEPTH} levels (does a list or dict hold itself?)"
        )));
    }
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        if let Ok(i) = value.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = value.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(PyValueError::new_err(format!(
            "the integer {value} does not fit in 64 bits"
        )));
    }
    if value.is_instance_of::<PyFloat>() {
        let f: f64 = value.extract()?;
        return Number::from_f64(f).map(Value::Number).ok_or_else(|| {
            PyValueError::new_err(format!("{f} is not a JSON number (NaN or infinite)"))
        });
    }
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut object = Map::new();
        for (key, item) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return Err(PyTypeError::new_err(format!(
                    "dict keys must be str, not {}",
                    key.get_type().name()?
                )));
            };
            object.insert(key.to_cow()?.into_owned(), to_json(&item, mode, depth + 1)?);
        }
        return Ok(Value::Object(object));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let mut array = Vec::new();
        for item in value.try_iter()? {
            array.push(to_json(&item?, mode, depth + 1)?);
        }
        return Ok(Value::Array(array));
    }
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(file(bytes.as_bytes()));
    }
    if let Ok(bytes) = value.cast::<PyByteArray>() {
        return Ok(file(&bytes.to_vec()));
    }
    if value.hasattr("__fspath__")? {
        let path: std::path::PathBuf = value.call_method0("__fspath__")?.extract()?;
        if mode == Mode::Options {
            return Ok(Value::String(path.to_string_lossy().into_owned()));
        }
        let bytes = std::fs::read(&path).map_err(|e| {
            pyo3::exceptions::PyOSError::new_err(format!("cannot read {}: {e}", path.display()))
        })?;
        return Ok(file(&bytes));
    }
    if mode == Mode::Arguments && value.hasattr("read")? {
        let content = value.call_method0("read")?;
        if let Ok(bytes) = content.cast::<PyBytes>() {
            return Ok(file(bytes.as_bytes()));
        }
        if let Ok(text) = content.cast::<PyString>() {
            return Ok(file(text.to_cow()?.as_bytes()));
        }
        return Err(PyTypeError::new_err(
            "a file object's read() must return bytes or str",
        ));
    }
    Err(PyTypeError::new_err(format!(
        "cannot send a {} to a tool: use dict, list, str, int, float, bool, None, or a file \
         (bytes, a path, an open file)",
        value.get_type().name()?
    )))
}

/// `value` as Python (dicts, lists, str, int, float, bool, None), straight from its serde form:
/// a response, a report or a JSON value alike.
fn to_python<'py, T: serde::Serialize + ?Sized>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, value)
        .map_err(|e| PyException::new_err(format!("cannot convert to Python: {e}")))
}

fn failure(py: Python<'_>, report: &Value) -> PyErr {
    match to_python(py, report) {
        Ok(report) => Failure::new_err((report.unbind(),)),
        Err(e) => e,
    }
}

/// A call of one tool, from the arguments of `Core.run` and `Core.start_run`.
fn run_request(
    tool: String,
    arguments: &Bound<'_, PyAny>,
    workspace: Option<std::path::PathBuf>,
    receipt: bool,
    seed: Option<u64>,
    user: Option<String>,
) -> PyResult<RunRequest> {
    let mut request = RunRequest::new(tool, to_json(arguments, Mode::Arguments, 0)?);
    if let Some(dir) = workspace {
        request = request.with_workspace(dir);
    }
    if receipt {
        request = request.with_receipt();
    }
    if let Some(seed) = seed {
        request = request.with_seed(seed);
    }
    if let Some(user) = user {
        request = request.with_user(user);
    }
    Ok(request)
}

/// A call's response as Python, or its error's report raised as `Failure`.
fn answer<'py>(
    py: Python<'py>,
    answer: Result<RunResponse, locara_facade::Error>,
) -> PyResult<Bound<'py, PyAny>> {
    match answer {
        Ok(response) => to_python(py, &response),
        Err(error) => Err(Failure::new_err((to_python(py, error.report())?.unbind(),))),
    }
}

/// What an operation asks of the facade.
enum Op {
    Run(RunRequest),
    Batch(Value),
    Chain(Value),
    Chat(Value, Option<Py<PyAny>>),
}

impl Op {
    fn parse(name: &str, request: &Bound<'_, PyAny>, on_event: Option<Py<PyAny>>) -> PyResult<Op> {
        let request = to_json(request, Mode::Arguments, 0)?;
        Ok(match name {
            "run_batch" => Op::Batch(request),
            "run_chain" => Op::Chain(request),
            "chat" => Op::Chat(request, on_event),
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown operation `{other}`"
                )));
            }
        })
    }

    async fn call(self, sdk: Sdk) -> Result<Value, Value> {
        match self {
            Op::Run(request) => match sdk.run_request(request).await {
                Ok(response) => serde_json::to_value(&response).map_err(|e| {
                    locara_sdk::error("internal", e.to_string(), "report this as a bug")
                }),
                Err(error) => Err(locara_sdk::report(&error)),
            },
            Op::Batch(request) => sdk.run_batch(request).await,
            Op::Chain(request) => sdk.run_chain(request).await,
            Op::Chat(request, on_event) => {
                let events = move |event: Value| {
                    if let Some(callback) = &on_event {
                        Python::attach(|py| {
                            let delivered =
                                to_python(py, &event).and_then(|e| callback.call1(py, (e,)));
                            if let Err(e) = delivered {
                                e.write_unraisable(py, None);
                            }
                        });
                    }
                };
                sdk.chat(request, &events).await
            }
        }
    }
}

/// A call started with [`Core::start`]; cancelling it drops the call, which stops the tool.
#[pyclass(frozen, module = "locara._locara")]
struct Pending {
    abort: tokio::task::AbortHandle,
}

#[pymethods]
impl Pending {
    /// Stops the call (its callback is then never called).
    fn cancel(&self) {
        self.abort.abort();
    }
}

/// An open Locara: the facade behind the Python `Locara` class.
#[pyclass(frozen, module = "locara._locara")]
struct Core {
    sdk: Sdk,
}

#[pymethods]
impl Core {
    /// Opens Locara with `options` (a dict); `approve`, when given, is called with each
    /// privileged call's description and decides it.
    #[new]
    #[pyo3(signature = (options, approve = None))]
    fn new(
        py: Python<'_>,
        options: &Bound<'_, PyAny>,
        approve: Option<Py<PyAny>>,
    ) -> PyResult<Core> {
        let options = to_json(options, Mode::Options, 0)?;
        let approve = approve.map(|approve| -> locara_sdk::ApproveFn {
            Arc::new(move |question: Value| {
                Python::attach(|py| {
                    let answer = to_python(py, &question)
                        .and_then(|q| approve.call1(py, (q,)))
                        .and_then(|a| a.is_truthy(py));
                    answer.unwrap_or_else(|e| {
                        e.write_unraisable(py, None);
                        false
                    })
                })
            })
        });
        let sdk = py.detach(|| Sdk::open(options, approve));
        sdk.map(|sdk| Core { sdk })
            .map_err(|report| failure(py, &report))
    }

    /// The callable tools.
    fn list<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.sdk.list())
    }

    /// The best matches for `query`.
    fn search<'py>(
        &self,
        py: Python<'py>,
        query: &str,
        limit: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.sdk.search(query, limit))
    }

    /// Everything needed to call `tool`.
    fn describe<'py>(&self, py: Python<'py>, tool: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.sdk.describe(tool) {
            Ok(description) => to_python(py, &description),
            Err(report) => Err(failure(py, &report)),
        }
    }

    /// The API of every callable tool as `typescript` or `python` source.
    fn export_api(&self, py: Python<'_>, language: &str) -> PyResult<String> {
        self.sdk
            .export_api(language)
            .map_err(|report| failure(py, &report))
    }

    /// Runs `tool` with `arguments`, blocking this thread (not the GIL) until it ends: the
    /// response, or `Failure(report)`.
    #[pyo3(signature = (tool, arguments, workspace = None, receipt = false, seed = None, user = None))]
    #[allow(
        clippy::too_many_arguments,
        reason = "the keyword arguments of Locara.run"
    )]
    fn run<'py>(
        &self,
        py: Python<'py>,
        tool: String,
        arguments: &Bound<'py, PyAny>,
        workspace: Option<std::path::PathBuf>,
        receipt: bool,
        seed: Option<u64>,
        user: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let request = run_request(tool, arguments, workspace, receipt, seed, user)?;
        let runtime = runtime()?;
        answer(
            py,
            py.detach(|| runtime.block_on(self.sdk.run_request(request))),
        )
    }

    /// Starts the call [`Core::run`] makes and returns at once; `done(ok, value)` is called on
    /// a runtime thread when it ends (`value` is the response, or the error report).
    #[pyo3(signature = (tool, arguments, done, workspace = None, receipt = false, seed = None, user = None))]
    #[allow(
        clippy::too_many_arguments,
        reason = "the keyword arguments of Locara.run"
    )]
    fn start_run(
        &self,
        tool: String,
        arguments: &Bound<'_, PyAny>,
        done: Py<PyAny>,
        workspace: Option<std::path::PathBuf>,
        receipt: bool,
        seed: Option<u64>,
        user: Option<String>,
    ) -> PyResult<Pending> {
        let request = run_request(tool, arguments, workspace, receipt, seed, user)?;
        self.spawn(Op::Run(request), done)
    }

    /// Runs `op` (`run_batch`, `run_chain`, `chat`) on `request`, blocking this thread (not the
    /// GIL) until it ends.
    #[pyo3(signature = (op, request, on_event = None))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        op: &str,
        request: &Bound<'py, PyAny>,
        on_event: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let op = Op::parse(op, request, on_event)?;
        let runtime = runtime()?;
        let sdk = self.sdk.clone();
        match py.detach(|| runtime.block_on(op.call(sdk))) {
            Ok(response) => to_python(py, &response),
            Err(report) => Err(failure(py, &report)),
        }
    }

    /// Starts `op` on the runtime and returns at once; `done(ok, value)` is called on a
    /// runtime thread when it ends (`value` is the response, or the error report).
    #[pyo3(signature = (op, request, done, on_event = None))]
    fn start(
        &self,
        op: &str,
        request: &Bound<'_, PyAny>,
        done: Py<PyAny>,
        on_event: Option<Py<PyAny>>,
    ) -> PyResult<Pending> {
        self.spawn(Op::parse(op, request, on_event)?, done)
    }
}

impl Core {
    /// Runs `op` on the runtime, calling `done(ok, value)` on a runtime thread when it ends.
    fn spawn(&self, op: Op, done: Py<PyAny>) -> PyResult<Pending> {
        let sdk = self.sdk.clone();
        let task = runtime()?.spawn(async move {
            let result = op.call(sdk).await;
            Python::attach(|py| {
                let (ok, value) = match &result {
                    Ok(response) => (true, response),
                    Err(report) => (false, report),
                };
                let delivered = to_python(py, value).and_then(|v| done.call1(py, (ok, v)));
                if let Err(e) = delivered {
                    e.write_unraisable(py, None);
                }
            });
        });
        Ok(Pending {
            abort: task.abort_handle(),
        })
    }
}

#[pymodule]
fn _locara(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Core>()?;
    m.add_class::<Pending>()?;
    m.add("Failure", m.py().get_type::<Failure>())?;
    Ok(())
}
