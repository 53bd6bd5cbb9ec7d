//! The files a tool produced: returned inline, or written to a granted output directory.

use std::{
    fs,
    io::Write as _,
    path::{Path, PathBuf},
};

use base64::Engine as _;
use locara_exec::OutputFile;
use locara_manifest::Grants;
use locara_registry::Digest;

use crate::{Error, FileReport};

/// The files as reports carrying their bytes in base64.
pub(crate) fn inline(files: Vec<OutputFile>) -> Vec<FileReport> {
    files
        .into_iter()
        .map(|file| FileReport {
            size_bytes: file.bytes.len() as u64,
            sha256: Digest::of(&file.bytes).to_hex(),
            base64: Some(base64::engine::general_purpose::STANDARD.encode(&file.bytes)),
            path: None,
            name: file.path,
        })
        .collect()
}

/// Writes the files into `dir`, or returns them inline when there is none.
///
/// An existing file is never overwritten: `page.pdf` becomes `page-1.pdf`, `page-2.pdf`, …
pub(crate) fn deliver(
    files: Vec<OutputFile>,
    dir: Option<&Path>,
) -> Result<Vec<FileReport>, Error> {
    let Some(dir) = dir else {
        return Ok(inline(files));
    };
    let mut reports = Vec::with_capacity(files.len());
    for file in files {
        let path = write_new(dir, &file.path, &file.bytes).map_err(|e| {
            Error::new(
                "output_dir",
                format!(
                    "cannot write the output file {} into {}: {e}",
                    file.path,
                    dir.display()
                ),
                "check that the output directory is writable and has space, then call again",
            )
        })?;
        reports.push(FileReport {
            size_bytes: file.bytes.len() as u64,
            sha256: Digest::of(&file.bytes).to_hex(),
            base64: None,
            path: Some(path),
            name: file.path,
        });
    }
    Ok(reports)
}

/// Creates `name` (a `/`-separated relative path) under `dir`, or a suffixed sibling if it exists.
fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let target = dir.join(name);
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent)?;
    }
    let stem = target
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = target
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()));
    for n in 0..10_000u32 {
        let candidate = if n == 0 {
            target.clone()
        } else {
            target.with_file_name(format!("{stem}-{n}{}", ext.as_deref().unwrap_or("")))
        };
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(mut out) => {
                out.write_all(bytes)?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(
        "10,000 files of that name already exist",
    ))
}

/// `dir`, canonical, if it is an existing directory inside a directory the app granted
/// read-write.
pub(crate) fn granted_output_dir(dir: &Path, grants: &Grants) -> Result<PathBuf, Error> {
    let denied = |reason: String| {
        Error::new(
            "capability_denied",
            format!("cannot write output files to {}: {reason}", dir.display()),
            "choose an output directory inside a directory the app granted read-write (`grants.fs` in locara.json, or `--out` on the command line)",
        )
    };
    let canonical = fs::canonicalize(dir)
        .ok()
        .filter(|d| d.is_dir())
        .ok_or_else(|| denied("it is not an existing directory".to_owned()))?;
    let granted = grants.fs.iter().any(|g| {
        g.write && fs::canonicalize(&g.path).is_ok_and(|root| canonical.starts_with(root))
    });
    if granted {
        Ok(canonical)
    } else {
        Err(denied(
            "it is not inside any directory the app granted read-write".to_owned(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_files_are_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("page.pdf"), b"precious").unwrap();
        let first = write_new(dir.path(), "page.pdf", b"new").unwrap();
        let second = write_new(dir.path(), "page.pdf", b"newer").unwrap();
        assert_eq!(first, dir.path().join("page-1.pdf"));
        assert_eq!(second, dir.path().join("page-2.pdf"));
        assert_eq!(fs::read(dir.path().join("page.pdf")).unwrap(), b"precious");
        assert_eq!(fs::read(&second).unwrap(), b"newer");
    }
}
