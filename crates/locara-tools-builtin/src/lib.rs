//! Locara's built-in tools: guest code, compiled to one `wasm32-wasip1` command module per tool.
//!
//! Each tool is a cargo bin (`src/bin/<bin>.rs`, the tool id with dots turned into dashes)
//! that only calls the `main` that `#[locara_pdk::tool]` generated in this library
//! (`code-exec.lua` has its own). The logic lives here so it also builds and is unit-tested on
//! the host, against real temporary directories instead of `/workspace`.
//!
//! This crate sits outside the host's layers: no host crate depends on it, and it knows
//! nothing about manifests, registries or sandboxes. The manifest templates for the tools
//! live next to it in `manifests/<id>.json`. It spawns no threads (wasip1 cannot), and it
//! does not defend against `..` in paths: the host jails every guest.
//!
//! | tool id | bin | logic |
//! |---|---|---|
//! | `filesystem.read` | `filesystem-read` | [`filesystem_read`](mod@filesystem_read) (`#[tool]`) |
//! | `filesystem.write` | `filesystem-write` | [`filesystem_write`](mod@filesystem_write) (`#[tool]`) |
//! | `filesystem.list` | `filesystem-list` | [`filesystem_list`](mod@filesystem_list) (`#[tool]`) |
//! | `filesystem.search` | `filesystem-search` | [`filesystem_search`](mod@filesystem_search) (`#[tool]`) |
//! | `file.edit` | `file-edit` | [`file_edit`](mod@file_edit) (`#[tool]`) |
//! | `bash.read-only` | `bash-read-only` | [`bash_read_only`](mod@bash_read_only) (`#[tool]`) |
//! | `text.chunk` | `text-chunk` | [`text_chunk`](mod@text_chunk) (`#[tool]`) |
//! | `code-exec.lua` | `code-exec-lua` | [`code_exec_lua::main`] (its own `main`) |
//! | `audio.detect-silence` | `audio-detect-silence` | [`audio_detect_silence`](mod@audio_detect_silence) (`#[tool]`) |
//! | `image.resize` | `image-resize` | [`image_resize`](mod@image_resize) (`#[tool]`) |
//! | `image.format-convert` | `image-format-convert` | [`image_format_convert`](mod@image_format_convert) (`#[tool]`) |
//! | `pdf.extract-text` | `pdf-extract-text` | [`pdf_extract_text`](mod@pdf_extract_text) (`#[tool]`) |
//! | `pdf.split` | `pdf-split` | [`pdf_split`](mod@pdf_split) (`#[tool]`) |
//! | `ocr` | `ocr` | [`ocr`](mod@ocr) (`#[tool]`), models in `/models` |
//! | `audio.transcribe` | `audio-transcribe` | [`audio_transcribe`](mod@audio_transcribe) (`#[tool]`) |
//! | `web.fetch` | `web-fetch` | [`web_fetch`](mod@web_fetch) (`#[tool]`), host service |
//! | `text.summarize` | `text-summarize` | [`text_llm::summarize`](mod@text_llm::summarize) (`#[tool]`), host service |
//! | `text.translate` | `text-translate` | [`text_llm::translate`](mod@text_llm::translate) (`#[tool]`), host service |
//! | `text.classify` | `text-classify` | [`text_llm::classify`](mod@text_llm::classify) (`#[tool]`), host service |
//!
//! The last four ask the host for what the sandbox cannot give (the network, the app's
//! language model) through [`host`]; the host decides from the manifest and the app's grants.

pub mod abi;
#[cfg(feature = "audio-transcribe")]
pub mod audio_transcribe;
/// Files in and out of a tool: `locara-pdk`'s.
pub use locara_pdk::files as blob;
#[cfg(feature = "code-exec-lua")]
pub mod code_exec_lua;
/// The host services a tool may ask for: `locara-pdk`'s.
pub use locara_pdk::host;

#[cfg(feature = "audio-detect-silence")]
pub mod audio_detect_silence;
pub mod bash_read_only;
pub mod file_edit;
pub mod filesystem_list;
pub mod filesystem_read;
pub mod filesystem_search;
pub mod filesystem_write;
mod glob;
#[cfg(feature = "image-format-convert")]
pub mod image_format_convert;
// Shared by three tools; a build of one of them leaves parts unused.
#[cfg(any(
    feature = "image-resize",
    feature = "image-format-convert",
    feature = "ocr"
))]
#[cfg_attr(
    not(all(
        feature = "image-resize",
        feature = "image-format-convert",
        feature = "ocr"
    )),
    allow(dead_code)
)]
mod image_io;
#[cfg(feature = "image-resize")]
pub mod image_resize;
#[cfg(feature = "ocr")]
pub mod ocr;
#[cfg(any(feature = "pdf-extract-text", feature = "pdf-split"))]
#[cfg_attr(
    not(all(feature = "pdf-extract-text", feature = "pdf-split")),
    allow(dead_code)
)]
mod pdf;
#[cfg(feature = "pdf-extract-text")]
pub mod pdf_extract_text;
#[cfg(feature = "pdf-split")]
pub mod pdf_split;
pub mod text_chunk;
pub mod text_llm;
mod walk;
pub mod web_fetch;

// The consistency checks cover every tool, so they need every tool's feature (the default).
#[cfg(all(test, feature = "default"))]
mod tests;

#[cfg(feature = "audio-detect-silence")]
pub use crate::audio_detect_silence::run as audio_detect_silence;
#[cfg(feature = "image-format-convert")]
pub use crate::image_format_convert::run as image_format_convert;
#[cfg(feature = "image-resize")]
pub use crate::image_resize::run as image_resize;
#[cfg(feature = "ocr")]
pub use crate::ocr::run as ocr;
#[cfg(feature = "pdf-extract-text")]
pub use crate::pdf_extract_text::run as pdf_extract_text;
#[cfg(feature = "pdf-split")]
pub use crate::pdf_split::run as pdf_split;
pub use crate::{
    bash_read_only::run as bash_read_only,
    file_edit::run as file_edit,
    filesystem_list::run as filesystem_list,
    filesystem_read::run as filesystem_read,
    filesystem_search::run as filesystem_search,
    filesystem_write::run as filesystem_write,
    text_chunk::run as text_chunk,
    text_llm::{
        classify::run as text_classify, summarize::run as text_summarize,
        translate::run as text_translate,
    },
    web_fetch::run as web_fetch,
};

/// Condenses a (multi-line) regex error into its last, most specific line.
pub(crate) fn regex_error(err: &regex::Error) -> String {
    match err {
        regex::Error::Syntax(text) => text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().trim_start_matches("error: ").to_owned())
            .unwrap_or_else(|| abi::one_line(text)),
        regex::Error::CompiledTooBig(_) => "the pattern is too large once compiled".to_owned(),
        other => abi::one_line(&other.to_string()),
    }
}
