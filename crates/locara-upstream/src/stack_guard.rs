//! A check on every C-stack allocation of a module whose shadow stack has none.
//!
//! A C (or C++, Rust, …) module compiled for wasm keeps its frames' addressable data on a
//! *shadow stack* in linear memory, whose pointer is a mutable global (`__stack_pointer`,
//! global 0). `wasm-ld`'s default layout is `[static data][stack, growing down towards the
//! data][heap]`, and nothing checks the pointer: a recursion deeper than the stack silently
//! overwrites the static data below it, and the module then crashes at random (an out-of-bounds
//! access, an undefined table element, `unreachable`). The prebuilt QuickJS of `code-exec.js`
//! is such a module, with a 64 KiB stack (about 210 levels of JavaScript recursion).
//!
//! [`guard`] rewrites every `global.set` of the stack pointer into
//! `if (new < limit) overflow(); sp = new`, where `limit` is the stack's lowest address (the end
//! of the static data) and `overflow` is a new function that calls itself without end: the
//! engine's own call stack then overflows, and the engine reports its stack-overflow trap
//! (which the sandbox reports as the `stack` limit) before a byte of static data is touched.
//! Each rewritten function gets one new `i32` local to hold the new value.
//!
//! The layout is checked, never assumed: [`layout`] refuses a module whose stack pointer is not
//! a defined mutable `i32` global 0 with a constant initial value, whose data segments are not
//! all active with constant offsets below `limit`, or whose initial memory does not reach the
//! initial stack pointer (the heap starts there). A module with the stack first (below its
//! data, as Rust's linker places it) is refused: its overflow already traps, below address 0.

use wasm_encoder::{CodeSection, Encode, RawSection};
use wasmparser::{Operator, Parser, Payload, TypeRef, ValType};

/// `wasm-ld`'s default stack size (`-z stack-size`), the size of QuickJS's stack.
pub const DEFAULT_STACK_SIZE: u32 = 64 * 1024;

/// Why a module could not be guarded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StackGuardError {
    /// The module is not laid out as `[data][stack][heap]` with its stack pointer in global 0.
    #[error("cannot guard the module's C stack: {reason}")]
    UnknownLayout {
        /// What does not match.
        reason: String,
    },
}

fn refuse(reason: impl Into<String>) -> StackGuardError {
    StackGuardError::UnknownLayout {
        reason: reason.into(),
    }
}

fn parse_error(error: wasmparser::BinaryReaderError) -> StackGuardError {
    refuse(format!("cannot parse it: {error}"))
}

/// Where a module's shadow stack is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackLayout {
    /// The initial stack pointer: the stack's top (exclusive), where the heap starts.
    pub top: u32,
    /// The stack's lowest address: the stack pointer may go down to it, not below.
    pub limit: u32,
    /// The end of the highest data segment (at most `limit`; the zero-initialized data the
    /// segments do not hold lies between the two).
    pub data_end: u32,
}

/// Finds and checks the layout of `module`'s shadow stack of `stack_size` bytes (see the
/// module docs).
///
/// # Errors
/// [`StackGuardError::UnknownLayout`] when the layout is not `[data][stack][heap]` with the
/// stack pointer in global 0.
pub fn layout(module: &[u8], stack_size: u32) -> Result<StackLayout, StackGuardError> {
    let mut top = None;
    let mut memory_bytes = None;
    let mut data_end = 0u32;
    for payload in Parser::new(0).parse_all(module) {
        match payload.map_err(parse_error)? {
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    match import.map_err(parse_error)?.ty {
                        TypeRef::Global(_) => {
                            return Err(refuse("it imports a global, so global 0 is not its own"));
                        }
                        TypeRef::Memory(_) => return Err(refuse("it imports its memory")),
                        _ => {}
                    }
                }
            }
            Payload::MemorySection(reader) => {
                if let Some(memory) = reader.into_iter().next() {
                    let memory = memory.map_err(parse_error)?;
                    if memory.memory64 {
                        return Err(refuse("its memory is 64-bit"));
                    }
                    memory_bytes = Some(memory.initial.saturating_mul(65536));
                }
            }
            Payload::GlobalSection(reader) => {
                if let Some(first) = reader.into_iter().next() {
                    let global = first.map_err(parse_error)?;
                    if !global.ty.mutable || global.ty.content_type != ValType::I32 {
                        return Err(refuse(
                            "its global 0 (the stack pointer) is not a mutable i32",
                        ));
                    }
                    match global.init_expr.get_operators_reader().read() {
                        Ok(Operator::I32Const { value }) => top = Some(value as u32),
                        _ => {
                            return Err(refuse(
                                "its stack pointer's initial value is not a constant",
                            ));
                        }
                    }
                }
            }
            Payload::DataSection(reader) => {
                for data in reader {
                    let data = data.map_err(parse_error)?;
                    let wasmparser::DataKind::Active {
                        memory_index: 0,
                        offset_expr,
                    } = data.kind
                    else {
                        return Err(refuse("it has a passive data segment"));
                    };
                    let Ok(Operator::I32Const { value }) =
                        offset_expr.get_operators_reader().read()
                    else {
                        return Err(refuse("a data segment's offset is not a constant"));
                    };
                    let end = u64::from(value as u32) + data.data.len() as u64;
                    let end =
                        u32::try_from(end).map_err(|_| refuse("a data segment ends past 4 GiB"))?;
                    data_end = data_end.max(end);
                }
            }
            _ => {}
        }
    }
    let top = top.ok_or_else(|| refuse("it has no globals (no stack pointer)"))?;
    let memory_bytes = memory_bytes.ok_or_else(|| refuse("it has no memory of its own"))?;
    if top % 16 != 0 {
        return Err(refuse(format!(
            "its stack pointer {top} is not 16-byte aligned"
        )));
    }
    let limit = top.checked_sub(stack_size).ok_or_else(|| {
        refuse(format!(
            "its stack pointer {top} is below the stack size {stack_size}"
        ))
    })?;
    if data_end > limit {
        return Err(refuse(format!(
            "its data ends at {data_end}, above the bottom {limit} of a {stack_size}-byte stack \
             under its stack pointer {top}: not a [data][stack][heap] layout"
        )));
    }
    if memory_bytes < u64::from(top) {
        return Err(refuse(format!(
            "its initial memory ({memory_bytes} bytes) ends below its stack pointer {top}"
        )));
    }
    Ok(StackLayout {
        top,
        limit,
        data_end,
    })
}

/// `module` with every `global.set 0` checked against the stack's limit (see the module
/// docs), for a stack of `stack_size` bytes ([`DEFAULT_STACK_SIZE`] for `wasm-ld`'s default).
///
/// Custom sections (names, DWARF) are dropped: the code offsets they refer to move.
///
/// # Errors
/// [`StackGuardError::UnknownLayout`] when [`layout`] refuses the module.
pub fn guard(module: &[u8], stack_size: u32) -> Result<Vec<u8>, StackGuardError> {
    let layout = layout(module, stack_size)?;
    // A first pass: the function types, to count each function's parameters.
    let mut types = Vec::new();
    let mut func_types: Vec<u32> = Vec::new();
    let mut imported = 0u32;
    for payload in Parser::new(0).parse_all(module) {
        match payload.map_err(parse_error)? {
            Payload::TypeSection(reader) => {
                for ty in reader.into_iter_err_on_gc_types() {
                    types.push(ty.map_err(parse_error)?);
                }
            }
            Payload::ImportSection(reader) => {
                for import in reader.into_imports() {
                    if let TypeRef::Func(ty) | TypeRef::FuncExact(ty) =
                        import.map_err(parse_error)?.ty
                    {
                        func_types.push(ty);
                        imported += 1;
                    }
                }
            }
            Payload::FunctionSection(reader) => {
                for ty in reader {
                    func_types.push(ty.map_err(parse_error)?);
                }
            }
            _ => {}
        }
    }
    let void_type = u32::try_from(types.len()).map_err(|_| refuse("too many types"))?;
    let overflow = u32::try_from(func_types.len()).map_err(|_| refuse("too many functions"))?;

    let mut out = wasm_encoder::Module::new();
    let mut saw_types = false;
    for payload in Parser::new(0).parse_all(module) {
        let payload = payload.map_err(parse_error)?;
        match &payload {
            Payload::CustomSection(_) | Payload::CodeSectionEntry(_) => {}
            Payload::TypeSection(reader) => {
                // The entries as they are, plus `[] -> []` for the overflow function.
                let range = reader.range();
                let mut raw = wasmparser::BinaryReader::new(&module[range.clone()], range.start);
                raw.read_var_u32().map_err(parse_error)?;
                let mut data = Vec::new();
                (void_type + 1).encode(&mut data);
                data.extend_from_slice(&module[raw.original_position()..range.end]);
                data.extend_from_slice(&[0x60, 0x00, 0x00]);
                out.section(&RawSection { id: 1, data: &data });
                saw_types = true;
            }
            Payload::FunctionSection(reader) => {
                out.section(
                    &crate::rewrite::functions_with(reader, &[void_type]).map_err(parse_error)?,
                );
            }
            Payload::CodeSectionStart { range, .. } => {
                let bodies = crate::rewrite::bodies(module, range.clone()).map_err(parse_error)?;
                let mut section = CodeSection::new();
                for (index, body) in bodies.into_iter().enumerate() {
                    let func = imported + index as u32;
                    let params = func_types
                        .get(func as usize)
                        .and_then(|ty| types.get(*ty as usize))
                        .map_or(0, |ty| ty.params().len() as u32);
                    section.raw(&guard_body(module, &body, params, &layout, overflow)?);
                }
                // `overflow`: calls itself until the engine's stack is exhausted.
                let mut body = vec![0x00, 0x10];
                overflow.encode(&mut body);
                body.push(0x0b);
                section.raw(&body);
                out.section(&section);
            }
            other => crate::rewrite::copy_section(&mut out, other, module),
        }
    }
    if !saw_types {
        return Err(refuse("it has no type section"));
    }
    Ok(out.finish())
}

/// One function body with its `global.set 0`s guarded (unchanged when it has none).
fn guard_body(
    module: &[u8],
    body: &wasmparser::FunctionBody<'_>,
    params: u32,
    layout: &StackLayout,
    overflow: u32,
) -> Result<Vec<u8>, StackGuardError> {
    let range = body.range();
    let mut locals = body.get_locals_reader().map_err(parse_error)?;
    let groups = locals.get_count();
    let mut declared = 0u32;
    for _ in 0..groups {
        declared = declared.saturating_add(locals.read().map_err(parse_error)?.0);
    }
    let ops_start = locals.original_position();
    let mut sets = Vec::new();
    let mut ops = body.get_operators_reader().map_err(parse_error)?;
    while !ops.eof() {
        let at = ops.original_position();
        if let Operator::GlobalSet { global_index: 0 } = ops.read().map_err(parse_error)? {
            sets.push(at..ops.original_position());
        }
    }
    if sets.is_empty() {
        return Ok(module[range].to_vec());
    }
    let scratch = params
        .checked_add(declared)
        .ok_or_else(|| refuse("a function has too many locals"))?;
    let mut out = Vec::with_capacity(range.len() + sets.len() * 16 + 8);
    // The local declarations, plus one i32.
    (groups + 1).encode(&mut out);
    let groups_start = {
        let mut reader = wasmparser::BinaryReader::new(&module[range.clone()], range.start);
        reader.read_var_u32().map_err(parse_error)?;
        reader.original_position()
    };
    out.extend_from_slice(&module[groups_start..ops_start]);
    out.extend_from_slice(&[0x01, 0x7f]);
    // The code, each `global.set 0` guarded:
    // local.tee $scratch; i32.const limit; i32.lt_u; if; call $overflow; end;
    // local.get $scratch; global.set 0
    let mut copied = ops_start;
    for set in sets {
        out.extend_from_slice(&module[copied..set.start]);
        out.push(0x22);
        scratch.encode(&mut out);
        out.push(0x41);
        (layout.limit as i32).encode(&mut out);
        out.extend_from_slice(&[0x49, 0x04, 0x40, 0x10]);
        overflow.encode(&mut out);
        out.extend_from_slice(&[0x0b, 0x20]);
        scratch.encode(&mut out);
        out.extend_from_slice(&module[set.clone()]);
        copied = set.end;
    }
    out.extend_from_slice(&module[copied..range.end]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use locara_sandbox::{
        BackendKind, Capabilities, LimitKind, Limits, RunStatus, Sandbox, SandboxConfig,
    };

    use super::*;

    /// Data at 1024..1040, a 64 KiB stack above it: the stack pointer starts at 66576 and may
    /// go down to 1040. `_start` moves it down by `depth` bytes in `$push` (which has a
    /// parameter and a local, so the scratch local's index is 2), then back up.
    fn module(top: u32, depth: u32) -> Vec<u8> {
        wat::parse_str(format!(
            r#"(module
                (memory (export "memory") 2)
                (global $sp (mut i32) (i32.const {top}))
                (func $push (param $n i32) (local i64)
                    (global.set $sp (i32.sub (global.get $sp) (local.get $n))))
                (func (export "_start")
                    (call $push (i32.const {depth}))
                    (global.set $sp (i32.add (global.get $sp) (i32.const {depth}))))
                (data (i32.const 1024) "0123456789abcdef"))"#
        ))
        .unwrap()
    }

    const TOP: u32 = 1040 + DEFAULT_STACK_SIZE;

    fn run(kind: BackendKind, wasm: &[u8]) -> RunStatus {
        let sandbox = Sandbox::new(&SandboxConfig::new(kind)).unwrap();
        let compiled = sandbox.compile(wasm, None).unwrap();
        compiled
            .run(b"", &Limits::default(), &Capabilities::new())
            .unwrap()
            .status
    }

    #[test]
    fn the_layout_is_found() {
        assert_eq!(
            layout(&module(TOP, 0), DEFAULT_STACK_SIZE).unwrap(),
            StackLayout {
                top: TOP,
                limit: 1040,
                data_end: 1040
            }
        );
    }

    #[test]
    fn the_guard_fires_exactly_below_the_limit() {
        for kind in [BackendKind::Wasmtime, BackendKind::Wasmi] {
            // Down to the limit itself: fine, before and after the rewrite.
            let full = module(TOP, DEFAULT_STACK_SIZE);
            assert_eq!(run(kind, &full), RunStatus::Exited(0), "{kind:?}");
            let guarded = guard(&full, DEFAULT_STACK_SIZE).unwrap();
            assert_eq!(run(kind, &guarded), RunStatus::Exited(0), "{kind:?}");
            let shallow = guard(&module(TOP, 16), DEFAULT_STACK_SIZE).unwrap();
            assert_eq!(run(kind, &shallow), RunStatus::Exited(0), "{kind:?}");
            // One byte further: unguarded, it silently overwrites the data; guarded, the
            // engine's stack overflows.
            let over = module(TOP, DEFAULT_STACK_SIZE + 1);
            assert_eq!(run(kind, &over), RunStatus::Exited(0), "{kind:?}");
            let guarded = guard(&over, DEFAULT_STACK_SIZE).unwrap();
            assert_eq!(
                run(kind, &guarded),
                RunStatus::LimitExceeded(LimitKind::Stack),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn other_layouts_are_refused() {
        let refused = |wasm: &[u8]| guard(wasm, DEFAULT_STACK_SIZE).unwrap_err().to_string();
        // The stack first, below the data (Rust's layout).
        let stack_first = wat::parse_str(
            r#"(module (memory 3) (global (mut i32) (i32.const 65536))
                (data (i32.const 65536) "x"))"#,
        )
        .unwrap();
        assert!(
            refused(&stack_first).contains("not a [data][stack][heap] layout"),
            "{}",
            refused(&stack_first)
        );
        // A stack smaller than the size asked for: the data would be in it.
        assert!(refused(&module(TOP - 16, 0)).contains("data ends at 1040"));
        assert!(refused(&module(1024, 0)).contains("below the stack size"));
        // No stack pointer.
        let no_global = wat::parse_str(r#"(module (memory 1))"#).unwrap();
        assert!(refused(&no_global).contains("no globals"));
        let immutable =
            wat::parse_str(r#"(module (memory 2) (global i32 (i32.const 65536)))"#).unwrap();
        assert!(refused(&immutable).contains("not a mutable i32"));
        // The heap would start past the initial memory.
        let small =
            wat::parse_str(r#"(module (memory 1) (global (mut i32) (i32.const 131072)))"#).unwrap();
        assert!(refused(&small).contains("initial memory"));
    }
}
