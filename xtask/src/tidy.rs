//! Repository rules checked as tests, as rust-analyzer's `tidy` does.

use std::path::{Path, PathBuf};

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        // `vendor/` holds patched copies of published crates, kept as published.
        if name == "target" || name == "vendor" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let root = crate::project_root();
    let mut paths = Vec::new();
    files(&root, "rs", &mut paths);
    assert!(
        paths.len() > 50,
        "found only {} files under {}",
        paths.len(),
        root.display()
    );
    let missing: Vec<String> = paths
        .iter()
        .filter(|p| {
            !std::fs::read_to_string(p).is_ok_and(|text| text.trim_start().starts_with("//!"))
        })
        .map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` doc comment: {missing:#?}"
    );
}

#[test]
fn every_crate_inherits_the_workspace_lints() {
    let root = crate::project_root();
    let mut manifests = Vec::new();
    files(&root, "toml", &mut manifests);
    manifests.retain(|p| {
        p.file_name().is_some_and(|n| n == "Cargo.toml") && p.parent() != Some(root.as_path())
    });
    assert!(manifests.len() >= 10, "{manifests:?}");
    for manifest in manifests {
        let text = std::fs::read_to_string(&manifest).unwrap();
        // A workspace of its own that inherits nothing (the Extism peer plugin, a guest built
        // only by the bench's build script) has no workspace lints to inherit.
        if text.contains("\n[workspace]") && !text.contains(".workspace = true") {
            continue;
        }
        assert!(
            text.contains("[lints]\nworkspace = true"),
            "{} does not inherit the workspace lints",
            manifest.display()
        );
        assert!(
            text.contains("edition.workspace = true"),
            "{} does not inherit the workspace edition",
            manifest.display()
        );
    }
}
