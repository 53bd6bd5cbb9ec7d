//! Files in and out of a tool: file arguments ([`Blob`]) and the output directory ([`OutDir`]).
//!
//! An argument whose manifest schema carries `"x-locara-blob": true` (a top-level field of
//! type [`Blob`] in a `#[tool]` input gets that schema) is either
//! `{"path": "..."}` (a file in the workspace, or one the host staged under `/tmp`) or
//! `{"base64": "..."}`. A Locara host never hands a tool base64: it decodes the bytes once,
//! writes them to `/tmp/in/<argument>` and passes `{"path": "/tmp/in/<argument>"}`, so a large
//! file never crosses the JSON stdin path. The base64 form is still read here for other hosts
//! and for native tests.
//!
//! A tool that produces files writes them into [`OutDir`] (`/tmp/out` in the guest) and names
//! them in its JSON result; the host collects that directory before the temp dir is wiped.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::ToolError;
use crate::workspace as abi;

/// Where the host collects the files a tool produces, inside the guest.
pub const GUEST_OUT_DIR: &str = "/tmp/out";

/// Where the host stages decoded blob arguments, inside the guest.
pub const GUEST_IN_DIR: &str = "/tmp/in";

/// A file argument: a path, or the bytes themselves in base64.
///
/// As a top-level field of a tool's input it is a file the host stages for the tool: its
/// schema carries `"x-locara-blob": true` (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blob {
    /// A path relative to the workspace, under `/workspace`, or a file the host staged under `/tmp`.
    #[serde(default)]
    pub path: Option<String>,
    /// The file's bytes, standard base64 with padding.
    #[serde(default)]
    pub base64: Option<String>,
}

impl Blob {
    /// A blob naming a path.
    pub fn path(path: impl Into<String>) -> Blob {
        Blob {
            path: Some(path.into()),
            base64: None,
        }
    }

    /// A blob carrying bytes.
    pub fn bytes(bytes: &[u8]) -> Blob {
        use base64::Engine as _;
        Blob {
            path: None,
            base64: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
        }
    }

    /// How the caller knows this blob, for messages: the path, or "the base64 bytes".
    pub fn describe(&self) -> String {
        match &self.path {
            Some(path) => format!("\"{path}\""),
            None => "the base64 bytes".to_owned(),
        }
    }

    /// Opens a blob given by path, for reading as a stream; `None` for one given by value.
    /// Returns the file and the path as the caller knows it.
    ///
    /// `root` is the workspace root ([`abi::tool_root`] in the guest). A path under `/tmp/` is
    /// opened as is: that is where the host stages decoded blobs.
    ///
    /// # Errors
    /// A bad-arguments error when the path does not exist or is a directory.
    pub fn open(&self, root: &Path) -> Result<Option<(fs::File, String)>, ToolError> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        let (full, display) = if path.starts_with("/tmp/") {
            (PathBuf::from(path), path.clone())
        } else {
            let resolved = abi::resolve_path(root, path)?;
            (resolved.full, resolved.display)
        };
        let file = fs::File::open(&full).map_err(|e| abi::io_error(&e, "open", &display))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(ToolError::bad_args(format!(
                "\"{display}\" is a directory; pass a file"
            )));
        }
        Ok(Some((file, display)))
    }

    /// Reads the whole blob, refusing more than `max_bytes`.
    ///
    /// `root` is the workspace root ([`abi::tool_root`] in the guest). A path under `/tmp/` is
    /// opened as is: that is where the host stages decoded blobs.
    ///
    /// # Errors
    /// A bad-arguments error when neither or both forms are given, the path does not exist,
    /// the base64 is invalid or the file is larger than `max_bytes`.
    pub fn read(&self, root: &Path, max_bytes: u64) -> Result<Vec<u8>, ToolError> {
        match (&self.path, &self.base64) {
            (Some(_), None) => {
                let (file, display) = self.open(root)?.expect("a path blob opens a file");
                let mut bytes = Vec::new();
                file.take(max_bytes.saturating_add(1))
                    .read_to_end(&mut bytes)
                    .map_err(|e| abi::io_error(&e, "read", &display))?;
                if bytes.len() as u64 > max_bytes {
                    return Err(too_large(&display, max_bytes));
                }
                Ok(bytes)
            }
            (None, Some(encoded)) => {
                use base64::Engine as _;
                if (encoded.len() as u64) / 4 * 3 > max_bytes.saturating_add(3) {
                    return Err(too_large("the base64 bytes", max_bytes));
                }
                base64::engine::general_purpose::STANDARD
                    .decode(encoded.trim())
                    .map_err(|e| {
                        ToolError::bad_args(format!(
                            "the base64 bytes are not valid standard base64: {e}"
                        ))
                    })
            }
            (None, None) => Err(ToolError::bad_args(
                "a file argument needs either \"path\" (a file in the workspace) or \"base64\" (the file's bytes)",
            )),
            (Some(_), Some(_)) => Err(ToolError::bad_args(
                "a file argument takes \"path\" or \"base64\", not both",
            )),
        }
    }
}

/// The schema the host recognises as a file argument (`docs/tool-abi.md` § Files in and out).
impl JsonSchema for Blob {
    fn schema_name() -> Cow<'static, str> {
        "Blob".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "x-locara-blob": true,
            "properties": {
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": "A file in the workspace (relative path or /workspace/...)"
                },
                "base64": {"type": "string", "description": "The file's bytes, standard base64"}
            },
            "additionalProperties": false,
            "minProperties": 1,
            "maxProperties": 1
        })
    }
}

fn too_large(display: &str, max_bytes: u64) -> ToolError {
    ToolError::bad_args(format!(
        "{display} is larger than this tool accepts ({max_bytes} bytes)"
    ))
}

/// A file a tool produced, as named in its JSON result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct OutputFile {
    /// The file's name in the output directory; the host returns it under this name.
    pub file: String,
    /// Its size in bytes.
    pub bytes: u64,
}

/// The directory a tool writes its output files into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutDir {
    path: PathBuf,
}

impl OutDir {
    /// The guest's output directory, [`GUEST_OUT_DIR`].
    pub fn guest() -> OutDir {
        OutDir::at(GUEST_OUT_DIR)
    }

    /// An output directory at `path` (native tests).
    pub fn at(path: impl Into<PathBuf>) -> OutDir {
        OutDir { path: path.into() }
    }

    /// Where the directory is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `bytes` as `name` (a plain file name, no directories).
    ///
    /// # Errors
    /// A failed error when the file cannot be written, e.g. the temp dir is full.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<OutputFile, ToolError> {
        debug_assert!(!name.contains('/'), "output file names are flat");
        fs::create_dir_all(&self.path).map_err(|e| write_error(&e, name))?;
        fs::write(self.path.join(name), bytes).map_err(|e| write_error(&e, name))?;
        Ok(OutputFile {
            file: name.to_owned(),
            bytes: bytes.len() as u64,
        })
    }
}

fn write_error(err: &io::Error, name: &str) -> ToolError {
    ToolError::failed(format!(
        "cannot write the output file \"{name}\": {err}; if the temp dir is full, ask for fewer or smaller outputs"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_paths_and_base64_and_refuses_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.bin"), b"hello").unwrap();
        assert_eq!(Blob::path("a.bin").read(dir.path(), 5).unwrap(), b"hello");
        assert_eq!(Blob::bytes(b"hi").read(dir.path(), 5).unwrap(), b"hi");

        let err = Blob::path("a.bin").read(dir.path(), 4).unwrap_err();
        assert_eq!(
            err.message(),
            "a.bin is larger than this tool accepts (4 bytes)"
        );
        let err = Blob::path("missing.bin").read(dir.path(), 4).unwrap_err();
        assert!(err.message().contains("no such file"), "{err}");
        let none = Blob {
            path: None,
            base64: None,
        };
        assert!(none.read(dir.path(), 4).is_err());
        let bad = Blob {
            path: None,
            base64: Some("***".to_owned()),
        };
        assert!(
            bad.read(dir.path(), 4)
                .unwrap_err()
                .message()
                .contains("base64")
        );
    }

    #[test]
    fn writes_output_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::at(dir.path().join("out"));
        let file = out.write("a.txt", b"abc").unwrap();
        assert_eq!(
            file,
            OutputFile {
                file: "a.txt".into(),
                bytes: 3
            }
        );
        assert_eq!(fs::read(dir.path().join("out/a.txt")).unwrap(), b"abc");
    }
}
