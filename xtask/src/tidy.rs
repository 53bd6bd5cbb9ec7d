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

/// `(package and version, its enabled features)` for every crate `cargo tree` shows `package`
/// building (normal and build dependencies).
fn feature_sets(package: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = std::process::Command::new(cargo)
        .current_dir(crate::project_root())
        .args([
            "tree",
            "--locked",
            "--offline",
            "--prefix",
            "none",
            "-e",
            "normal,build",
        ])
        .args(["-p", package, "-f", "{p}|{f}"])
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut sets = std::collections::BTreeMap::<String, Vec<String>>::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((crate_, features)) = line.split_once('|') else {
            continue;
        };
        let name: Vec<&str> = crate_.split_whitespace().take(2).collect();
        let features = features.trim_end_matches(" (*)").trim().to_owned();
        let set = sets.entry(name.join(" ")).or_default();
        if !set.contains(&features) {
            set.push(features);
            set.sort();
        }
    }
    sets
}

/// The README's first run is `cargo xtask build-tools` then `cargo run -p locara-cli`; a
/// crate both build but with different features is compiled twice, with all it sits under.
#[test]
fn xtask_and_the_cli_build_shared_crates_with_the_same_features() {
    let xtask = feature_sets("xtask");
    let cli = feature_sets("locara-cli");
    assert!(
        xtask.keys().any(|k| k.starts_with("wasmtime ")),
        "{xtask:?}"
    );
    let mismatched: Vec<String> = xtask
        .iter()
        .filter_map(|(crate_, features)| {
            let theirs = cli.get(crate_)?;
            (features != theirs).then(|| format!("{crate_}: xtask {features:?}, cli {theirs:?}"))
        })
        .collect();
    assert!(
        mismatched.is_empty(),
        "these crates would be compiled twice by the README's first run; add the union of \
         their features to crates/locara-workspace-hack/Cargo.toml:\n{}",
        mismatched.join("\n")
    );
}
