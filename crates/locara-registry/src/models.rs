//! The model store: model files pinned by SHA-256, and the per-tool directory a tool sees.

use std::{
    collections::HashSet,
    fs,
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
    sync::Mutex,
};

use locara_manifest::{ModelDependency, Sha256Hex, ToolManifest};

use crate::{Digest, Error, error::io, fs::ReadLimit};

/// Model files, content-addressed: `<root>/sha256/<hex>`.
///
/// A tool sees its models by the names its manifest gives them: [`ModelStore::view`] checks
/// every pinned file and returns a directory of hard links named that way
/// (`<root>/views/<key>/<name>`), which the runtime preopens read-only at `/models`. Each file
/// is hashed once per process, as a stream (a model is never read whole), after checking that
/// it is a regular file of the pinned size; a view entry that is not the same file as its store
/// entry (it was replaced) is linked again.
#[derive(Debug)]
pub struct ModelStore {
    root: PathBuf,
    verified: Mutex<HashSet<(String, u64, i64, i64)>>,
}

impl ModelStore {
    /// A store rooted at `root` (created on first install).
    pub fn new(root: impl Into<PathBuf>) -> ModelStore {
        ModelStore {
            root: root.into(),
            verified: Mutex::default(),
        }
    }

    /// The store's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the model pinned by `sha256` is stored.
    pub fn path_of(&self, sha256: &Sha256Hex) -> PathBuf {
        self.root.join("sha256").join(sha256.as_str())
    }

    /// Whether the model `dependency` pins is stored (by name only: [`ModelStore::view`] checks
    /// the bytes).
    pub fn contains(&self, dependency: &ModelDependency) -> bool {
        self.path_of(&dependency.sha256).is_file()
    }

    /// Stores `bytes` as the model `dependency` of `tool`, after checking size and hash.
    ///
    /// # Errors
    /// [`Error::ModelMismatch`] when the bytes are not what the manifest pins; [`Error::Io`]
    /// when the store cannot be written.
    pub fn install(
        &self,
        tool: &ToolManifest,
        dependency: &ModelDependency,
        bytes: &[u8],
    ) -> Result<PathBuf, Error> {
        let path = self.path_of(&dependency.sha256);
        check_bytes(tool, dependency, &path, bytes)?;
        let dir = self.root.join("sha256");
        fs::create_dir_all(&dir).map_err(io("create", &dir))?;
        let partial = dir.join(format!(
            ".{}.partial-{}",
            dependency.sha256,
            std::process::id()
        ));
        fs::write(&partial, bytes).map_err(io("write", &partial))?;
        fs::rename(&partial, &path).map_err(io("rename", &partial))?;
        Ok(path)
    }

    /// Checks every model `tool` depends on and returns the directory that holds them under
    /// their names, or `None` for a tool without models.
    ///
    /// # Errors
    /// [`Error::ModelMissing`] naming the file and the command that fetches it;
    /// [`Error::ModelMismatch`] when a stored file is not what the manifest pins.
    pub fn view(&self, tool: &ToolManifest) -> Result<Option<PathBuf>, Error> {
        if tool.model_dependencies.is_empty() {
            return Ok(None);
        }
        for dependency in &tool.model_dependencies {
            self.verify(tool, dependency)?;
        }
        let mut key = String::new();
        for dependency in &tool.model_dependencies {
            key.push_str(&dependency.name);
            key.push('\0');
            key.push_str(dependency.sha256.as_str());
            key.push('\0');
        }
        let view = self
            .root
            .join("views")
            .join(&Digest::of(key.as_bytes()).to_hex()[..32]);
        fs::create_dir_all(&view).map_err(io("create", &view))?;
        for dependency in &tool.model_dependencies {
            let stored = self.path_of(&dependency.sha256);
            let linked = view.join(&dependency.name);
            if same_file(&stored, &linked) {
                continue;
            }
            let partial = view.join(format!(
                ".{}.partial-{}",
                dependency.name,
                std::process::id()
            ));
            let _ = fs::remove_file(&partial);
            if fs::hard_link(&stored, &partial).is_err() {
                fs::copy(&stored, &partial).map_err(io("copy", &stored))?;
            }
            fs::rename(&partial, &linked).map_err(io("rename", &partial))?;
        }
        Ok(Some(view))
    }

    /// Checks one stored model against its pin, once per process and file version. The file
    /// must be a regular file of the pinned size; it is hashed as a stream, never read whole.
    fn verify(&self, tool: &ToolManifest, dependency: &ModelDependency) -> Result<(), Error> {
        let path = self.path_of(&dependency.sha256);
        let (file, meta) = match crate::fs::open_regular(&path) {
            Ok(opened) => opened,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::ModelMissing {
                    tool: tool.tool_ref().to_string(),
                    name: dependency.name.clone(),
                    sha256: dependency.sha256.clone(),
                    path,
                });
            }
            Err(e) => return Err(e),
        };
        let stamp = (
            dependency.sha256.as_str().to_owned(),
            meta.ino(),
            meta.mtime(),
            meta.mtime_nsec(),
        );
        let mut verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
        if verified.contains(&stamp) {
            return Ok(());
        }
        let mismatch = |found: String| Error::ModelMismatch {
            tool: tool.tool_ref().to_string(),
            name: dependency.name.clone(),
            path: path.clone(),
            expected: format!(
                "{} bytes, sha256 {}",
                dependency.size_bytes, dependency.sha256
            ),
            found,
        };
        if meta.len() != dependency.size_bytes {
            return Err(mismatch(format!("{} bytes", meta.len())));
        }
        let limit = ReadLimit::MODEL.at_most(dependency.size_bytes);
        let (digest, length) =
            crate::fs::hash_from(file, &meta, &path, limit).map_err(|e| match e {
                // It grew while being hashed: one byte past the pinned size was read.
                Error::FileTooLarge { .. } if limit.max_bytes() == dependency.size_bytes => {
                    mismatch(format!("more than {} bytes", dependency.size_bytes))
                }
                e => e,
            })?;
        if length != dependency.size_bytes || digest.to_hex() != dependency.sha256.as_str() {
            return Err(mismatch(format!(
                "{length} bytes, sha256 {}",
                digest.to_hex()
            )));
        }
        verified.insert(stamp);
        Ok(())
    }
}

fn check_bytes(
    tool: &ToolManifest,
    dependency: &ModelDependency,
    path: &Path,
    bytes: &[u8],
) -> Result<(), Error> {
    let digest = Digest::of(bytes);
    if bytes.len() as u64 != dependency.size_bytes || digest.to_hex() != dependency.sha256.as_str()
    {
        return Err(Error::ModelMismatch {
            tool: tool.tool_ref().to_string(),
            name: dependency.name.clone(),
            path: path.to_owned(),
            expected: format!(
                "{} bytes, sha256 {}",
                dependency.size_bytes, dependency.sha256
            ),
            found: format!("{} bytes, sha256 {}", bytes.len(), digest.to_hex()),
        });
    }
    Ok(())
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::symlink_metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(models: &[(&str, &[u8])]) -> ToolManifest {
        let deps: Vec<String> = models
            .iter()
            .map(|(name, bytes)| {
                format!(
                    r#"{{"name": "{name}", "source": "test", "sha256": "{}", "size_bytes": {}, "license": "MIT"}}"#,
                    Digest::of(bytes).to_hex(),
                    bytes.len()
                )
            })
            .collect();
        let json = format!(
            r#"{{"schema_version": 1, "id": "ocr", "version": "0.1.0", "display_name": "OCR",
            "description": "d", "license": "MIT",
            "artifact": {{"url": "ocr-0.1.0.wasm", "sha256": "{}", "size_bytes": 1}},
            "model_dependencies": [{}], "safety_tier": "read_only",
            "input_schema": {{"type": "object"}}, "output_schema": {{"type": "object"}}}}"#,
            Digest::of(b"").to_hex(),
            deps.join(",")
        );
        ToolManifest::from_json(&json).unwrap()
    }

    #[test]
    fn a_view_names_verified_models_and_refuses_missing_or_changed_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = ModelStore::new(dir.path());
        let tool = manifest(&[("det.onnx", b"detector"), ("rec.onnx", b"recognizer")]);
        assert!(manifest(&[]).model_dependencies.is_empty());
        assert_eq!(store.view(&manifest(&[])).unwrap(), None);

        let err = store.view(&tool).unwrap_err().to_string();
        assert!(
            err.starts_with("the model `det.onnx` (sha256 ")
                && err.ends_with("run `locara models fetch ocr` to fetch it"),
            "{err}"
        );

        let wrong = store.install(&tool, &tool.model_dependencies[0], b"other");
        assert!(matches!(wrong, Err(Error::ModelMismatch { .. })));
        store
            .install(&tool, &tool.model_dependencies[0], b"detector")
            .unwrap();
        store
            .install(&tool, &tool.model_dependencies[1], b"recognizer")
            .unwrap();
        let view = store.view(&tool).unwrap().unwrap();
        assert_eq!(fs::read(view.join("det.onnx")).unwrap(), b"detector");
        assert_eq!(fs::read(view.join("rec.onnx")).unwrap(), b"recognizer");

        // A replaced view entry is linked again; a changed store file is refused by a fresh
        // process (store), whose first look hashes it.
        fs::remove_file(view.join("det.onnx")).unwrap();
        fs::write(view.join("det.onnx"), b"evil").unwrap();
        let view = store.view(&tool).unwrap().unwrap();
        assert_eq!(fs::read(view.join("det.onnx")).unwrap(), b"detector");
        let stored = store.path_of(&tool.model_dependencies[1].sha256);
        fs::remove_file(&stored).unwrap();
        fs::write(&stored, b"recognizeR").unwrap();
        let err = ModelStore::new(dir.path()).view(&tool).unwrap_err();
        assert!(err.to_string().contains("has 10 bytes, sha256 "), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_dev_zero_in_place_of_a_model_is_refused_quickly() {
        let dir = tempfile::tempdir().unwrap();
        let store = ModelStore::new(dir.path());
        let tool = manifest(&[("det.onnx", b"detector")]);
        store
            .install(&tool, &tool.model_dependencies[0], b"detector")
            .unwrap();
        let stored = store.path_of(&tool.model_dependencies[0].sha256);
        for kind in ["FIFO (named pipe)", "character device"] {
            fs::remove_file(&stored).unwrap();
            if kind == "character device" {
                std::os::unix::fs::symlink("/dev/zero", &stored).unwrap();
            } else {
                let status = std::process::Command::new("mkfifo")
                    .arg(&stored)
                    .status()
                    .unwrap();
                assert!(status.success());
            }
            // A fresh store (nothing verified yet), on a thread: a blocked read fails the test.
            let (send, receive) = std::sync::mpsc::channel();
            let (root, tool) = (dir.path().to_owned(), tool.clone());
            std::thread::spawn(move || send.send(ModelStore::new(root).view(&tool)));
            let err = receive
                .recv_timeout(std::time::Duration::from_secs(20))
                .expect("checking the model blocked")
                .unwrap_err();
            assert!(
                matches!(&err, Error::NotARegularFile { kind: k, .. } if *k == kind),
                "{err:?}"
            );
        }
    }

    #[test]
    fn a_model_of_another_size_is_refused_without_hashing_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = ModelStore::new(dir.path());
        let tool = manifest(&[("det.onnx", b"detector")]);
        store
            .install(&tool, &tool.model_dependencies[0], b"detector")
            .unwrap();
        let stored = store.path_of(&tool.model_dependencies[0].sha256);
        // A sparse 8 GiB file: hashing it would read 8 GiB; its size alone refuses it.
        fs::remove_file(&stored).unwrap();
        fs::File::create(&stored).unwrap().set_len(8 << 30).unwrap();
        let started = std::time::Instant::now();
        let err = ModelStore::new(dir.path()).view(&tool).unwrap_err();
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(
            err.to_string()
                .contains("has 8589934592 bytes, but the manifest pins 8 bytes"),
            "{err}"
        );
    }
}
