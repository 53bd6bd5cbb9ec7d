//! What the module rewriters (`cpython`, `quickjs`, `stack_guard`)
//! share: a section they leave alone copied as it is, the function section with functions
//! appended, the code section's bodies read for copying, and the export section with a new
//! entry point and init export.
//!
//! It knows the binary format only as far as `wasmparser` reads it and `wasm-encoder` writes
//! it; what a rewrite changes, and why a module is refused, is each rewriter's business (every
//! function here returns the parser's error for the caller to word).

#[cfg(feature = "stack-guard")]
use std::ops::Range;

#[cfg(feature = "stack-guard")]
use wasm_encoder::FunctionSection;
use wasm_encoder::RawSection;
use wasmparser::Payload;
#[cfg(feature = "stack-guard")]
use wasmparser::{
    BinaryReader, BinaryReaderError, CodeSectionReader, FunctionBody, FunctionSectionReader,
};

/// Appends `payload`, a section of `module`, to `out` as it is (nothing for a payload that is
/// not a whole section, such as one function body).
pub(crate) fn copy_section(out: &mut wasm_encoder::Module, payload: &Payload<'_>, module: &[u8]) {
    if let Some((id, range)) = payload.as_section() {
        out.section(&RawSection {
            id,
            data: &module[range],
        });
    }
}

/// The function section of `reader` with functions of the types `added` appended.
#[cfg(feature = "stack-guard")]
pub(crate) fn functions_with(
    reader: &FunctionSectionReader<'_>,
    added: &[u32],
) -> Result<FunctionSection, BinaryReaderError> {
    let mut section = FunctionSection::new();
    for ty in reader.clone() {
        section.function(ty?);
    }
    for &ty in added {
        section.function(ty);
    }
    Ok(section)
}

/// The function bodies of the code section at `range` of `module`; each one's `range()` is its
/// bytes without the size prefix, which `CodeSection::raw` takes as they are.
#[cfg(feature = "stack-guard")]
pub(crate) fn bodies(
    module: &[u8],
    range: Range<usize>,
) -> Result<Vec<FunctionBody<'_>>, BinaryReaderError> {
    CodeSectionReader::new(BinaryReader::new(&module[range.clone()], range.start))?
        .into_iter()
        .collect()
}

/// The export section of `reader` with `_start` exporting function `start` instead, and
/// `init.0` exporting function `init.1`.
#[cfg(all(feature = "cpython", feature = "stack-guard"))]
pub(crate) fn exports_with_entry(
    reader: &wasmparser::ExportSectionReader<'_>,
    start: u32,
    init: (&str, u32),
) -> Result<wasm_encoder::ExportSection, BinaryReaderError> {
    use wasm_encoder::{ExportKind, ExportSection};

    let mut section = ExportSection::new();
    for export in reader.clone() {
        let export = export?;
        if export.name == "_start" {
            continue;
        }
        section.export(export.name, export_kind(export.kind), export.index);
    }
    section.export("_start", ExportKind::Func, start);
    section.export(init.0, ExportKind::Func, init.1);
    Ok(section)
}

/// The encoder's kind of an export the parser read.
#[cfg(feature = "cpython")]
pub(crate) fn export_kind(kind: wasmparser::ExternalKind) -> wasm_encoder::ExportKind {
    use wasm_encoder::ExportKind;
    use wasmparser::ExternalKind;

    match kind {
        ExternalKind::Func | ExternalKind::FuncExact => ExportKind::Func,
        ExternalKind::Table => ExportKind::Table,
        ExternalKind::Memory => ExportKind::Memory,
        ExternalKind::Global => ExportKind::Global,
        ExternalKind::Tag => ExportKind::Tag,
    }
}
