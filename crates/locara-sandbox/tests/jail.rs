//! Path jailing, end to end and on both engines: guest paths generated with proptest (`..`,
//! symlinks that point out of the jail, absolute paths, odd names) never read or write anything
//! outside the preopened directories.
//!
//! A host tree holds a jail, with symlinks out of it, next to an `outside` directory holding a
//! random secret. Each case hands a batch of paths to the probe guest's `paths` op, which reads
//! each one (and writes it, in the write cases), with the jail preopened read-write or
//! read-only at `/workspace`. Then:
//! - no read returned the secret or `/etc/passwd`;
//! - nothing outside the jail changed (a snapshot of the whole host tree, the jail included
//!   when it was preopened read-only), and no file appeared in `/`, `/etc` or the host's temp
//!   dir;
//! - the call removed its temp dir, and nothing escaped from it either;
//! - a control path inside the jail still reads and writes as it should, so the properties are
//!   not met by a sandbox that refuses everything;
//! - both engines give the same results.
//!
//! The generator is seeded: a run is reproducible. `PROPTEST_RNG_SEED=<u64>` and
//! `PROPTEST_CASES=<n>` explore further.

mod common;

use common::backend_test;

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::SystemTime,
};

use locara_sandbox::{
    BackendKind, Capabilities, Compiled, DirPerms, Limits, RunStatus, Sandbox, SandboxConfig,
};
use proptest::{
    prelude::*,
    test_runner::{RngSeed, TestRunner},
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// One engine's probe, with a temp root of its own (so that each call's cleanup can be
/// checked) next to a secret (so that an escape from `/tmp` can be seen).
struct Engine {
    module: Compiled,
    dir: TempDir,
    secret: String,
}

/// A fresh directory under the target dir: creating hundreds of symlinks and directories
/// there is much faster than in `/tmp` on some machines.
fn scratch() -> TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Where the engine's calls make their temp dirs, inside [`Engine::dir`].
const TEMP_ROOT: &str = "temp-root";

impl Engine {
    fn new(kind: BackendKind) -> Engine {
        let dir = scratch();
        let secret = format!("TEMP-SECRET-{:016x}", rand_u64());
        std::fs::write(dir.path().join("secret.txt"), &secret).unwrap();
        std::fs::create_dir(dir.path().join(TEMP_ROOT)).unwrap();
        let mut config = SandboxConfig::new(kind);
        config.temp_root(dir.path().join(TEMP_ROOT));
        let wasm = std::fs::read(locara_test_artifacts::PROBE).expect("the probe guest was built");
        let module = Sandbox::new(&config)
            .expect("engine starts")
            .compile(&wasm, None)
            .expect("the probe compiles");
        Engine {
            module,
            dir,
            secret,
        }
    }

    /// Checks that the last call left the temp root empty and nothing next to it changed.
    fn assert_clean(&self) {
        let left: Vec<_> = std::fs::read_dir(self.dir.path().join(TEMP_ROOT))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "the temp dir was left behind: {left:?}");
        let mut beside: Vec<_> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        beside.sort();
        assert_eq!(beside, ["secret.txt", TEMP_ROOT], "beside the temp root");
        let secret = std::fs::read_to_string(self.dir.path().join("secret.txt")).unwrap();
        assert_eq!(secret, self.secret);
    }
}

/// How many directories the jail sits below the root of the host tree: more than the most
/// levels a generated path can climb (two per component, through `b` or `up2`), so that an
/// escape by `..` lands inside the tree, where the snapshot sees it.
const DEPTH: usize = 2 * MAX_COMPONENTS + 2;

/// The directories of the jail: the same names at every level, so that generated paths
/// resolve deep; the same relative link leaves the jail from one level and not from another.
const LEVELS: &[&str] = &["", "sub/", "sub/sub/"];

/// The symlinks at every level of the jail, as `(name, target)`; a target starting with `@`
/// is absolute, below the directory that holds the jail.
const LINKS: &[(&str, &str)] = &[
    ("outside", "../outside"),
    ("abs-outside", "@outside"),
    ("etc", "/etc"),
    ("passwd", "/etc/passwd"),
    ("secret.txt", "../outside/secret.txt"),
    // A chain, and loops.
    ("a", "b"),
    ("b", "../.."),
    ("loop1", "loop2"),
    ("loop2", "loop1"),
    ("self", "self"),
    // Dangling: a write that followed them would create a file outside.
    ("new-outside", "../outside/created.txt"),
    ("new-abs", "@outside/created-abs.txt"),
    // Up one or two levels: inside the jail from below, out of it from the top.
    ("up", ".."),
    ("up2", "../.."),
    // Down, and absolute even to the jail itself (refused).
    ("inside-link", "sub"),
    ("inside-abs", "@jail/sub"),
];

/// The host tree: built once per test, its jail rebuilt after each call that writes (making
/// symlinks is slow on some file systems).
struct Host {
    root: TempDir,
    /// The directory that holds `jail` and `outside`, `DEPTH` levels below `root`.
    base: PathBuf,
    secret: String,
}

impl Host {
    fn new() -> Host {
        let root = scratch();
        let secret = format!("SECRET-{:016x}", rand_u64());
        // A secret at every level, for reads that climb out by `..`.
        let mut base = root.path().to_path_buf();
        std::fs::write(base.join("secret.txt"), &secret).unwrap();
        for level in 0..DEPTH {
            base.push(format!("d{level:02}"));
            std::fs::create_dir(&base).unwrap();
            std::fs::write(base.join("secret.txt"), &secret).unwrap();
        }
        let outside = base.join("outside");
        std::fs::create_dir_all(outside.join("etc")).unwrap();
        std::fs::write(outside.join("secret.txt"), &secret).unwrap();
        std::fs::write(outside.join("etc/passwd"), format!("root:{secret}")).unwrap();
        let host = Host { root, base, secret };
        host.build_jail();
        host
    }

    fn jail(&self) -> PathBuf {
        self.base.join("jail")
    }

    fn build_jail(&self) {
        for level in LEVELS {
            let dir = self.jail().join(level);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("jail-file"), format!("inside {level}")).unwrap();
            for (link, target) in LINKS {
                let target = match target.strip_prefix('@') {
                    Some(below_base) => self.base.join(below_base),
                    None => PathBuf::from(target),
                };
                std::os::unix::fs::symlink(target, dir.join(link)).unwrap();
            }
        }
    }

    /// Puts the jail back as it was, after a call that could write in it.
    fn reset_jail(&self) {
        // Does not follow the symlinks.
        std::fs::remove_dir_all(self.jail()).unwrap();
        self.build_jail();
    }

    /// Everything in the tree, without following symlinks; the jail's contents only with
    /// `with_jail`.
    fn snapshot(&self, with_jail: bool) -> BTreeMap<PathBuf, Node> {
        let mut out = BTreeMap::new();
        let skip = (!with_jail).then(|| self.jail());
        walk(self.root.path(), skip.as_deref(), &mut out);
        out
    }
}

/// A random `u64`, from the OS through `std`'s hasher keys: no extra dependency.
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(0u8)
}

/// What the snapshot records of one entry.
#[derive(Debug, PartialEq, Eq)]
enum Node {
    Dir,
    File(Vec<u8>, SystemTime),
    Link(PathBuf),
    Other,
}

fn walk(dir: &Path, skip: Option<&Path>, out: &mut BTreeMap<PathBuf, Node>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let node = if meta.is_dir() {
            if skip != Some(path.as_path()) {
                walk(&path, skip, out);
            }
            Node::Dir
        } else if meta.is_file() {
            Node::File(std::fs::read(&path).unwrap(), meta.modified().unwrap())
        } else if meta.is_symlink() {
            Node::Link(std::fs::read_link(&path).unwrap())
        } else {
            Node::Other
        };
        out.insert(path, node);
    }
}

/// The most components in a generated path.
const MAX_COMPONENTS: usize = 8;

/// What a write writes.
const PWNED: &str = "pwned";

/// A path inside the jail whose read and write results are known.
const CONTROL: &str = "/workspace/jail-file";

/// The host directories a broken jail would most likely write into, besides the case's tree.
fn host_dirs() -> [PathBuf; 3] {
    [
        PathBuf::from("/"),
        PathBuf::from("/etc"),
        std::env::temp_dir(),
    ]
}

/// The file names `paths` end in, where a write that escaped would create them.
fn leaf_names(paths: &[String]) -> Vec<&str> {
    let mut names: Vec<&str> = paths
        .iter()
        .filter_map(|p| p.rsplit('/').next())
        .filter(|name| !matches!(*name, "" | "." | ".."))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Which of `names` exist in [`host_dirs`].
fn host_files(names: &[&str]) -> Vec<PathBuf> {
    host_dirs()
        .iter()
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .filter(|path| std::fs::symlink_metadata(path).is_ok())
        .collect()
}

/// `paths`, less those that end in `passwd` when `write`: even a broken jail must not clobber
/// the host's real `/etc/passwd`.
fn safe(paths: &[String], write: bool) -> Vec<String> {
    paths
        .iter()
        .filter(|p| !write || !p.trim_end_matches('/').ends_with("passwd"))
        .cloned()
        .collect()
}

/// The probe's input: read each of `paths`, and write [`PWNED`] to it when `write`.
fn paths_op(paths: &[String], write: bool) -> Value {
    let mut input = json!({ "op": "paths", "paths": paths });
    if write {
        input["content"] = json!(PWNED);
    }
    input
}

/// Runs the probe's `paths` op on `paths` (after [`CONTROL`]) with the jail preopened at
/// `/workspace` with `perms`, writing when `write`, and checks every property. Returns the
/// results (without the control's), as `{path, read, write}`.
fn check(
    engine: &Engine,
    host: &Host,
    paths: &[String],
    perms: DirPerms,
    write: bool,
) -> Vec<Value> {
    let paths = safe(paths, write);
    let mut batch = vec![CONTROL.to_owned()];
    batch.extend(paths.iter().cloned());
    let input = paths_op(&batch, write);

    let read_only = perms == DirPerms::ReadOnly;
    let before = host.snapshot(read_only);
    let names = leaf_names(&paths);
    let host_before = host_files(&names);
    let caps = Capabilities::new().preopened_dir(host.jail(), "/workspace", perms);
    let outcome = engine
        .module
        .run(input.to_string().as_bytes(), &Limits::default(), &caps)
        .expect("the call starts");
    let after = host.snapshot(read_only);
    if write {
        host.reset_jail();
    }
    engine.assert_clean();
    assert_eq!(
        outcome.status,
        RunStatus::Exited(0),
        "stderr: {}",
        String::from_utf8_lossy(&outcome.stderr)
    );
    let output: Value = serde_json::from_slice(&outcome.stdout).expect("stdout is JSON");
    let results = output["results"].as_array().expect("results").clone();
    assert_eq!(results.len(), batch.len(), "{output}");

    for result in &results {
        let read = result["read"].as_str().unwrap();
        for secret in [&host.secret, &engine.secret] {
            assert!(!read.contains(secret), "read leaked a secret: {result}");
        }
        assert!(!read.contains("root:"), "read leaked /etc/passwd: {result}");
        // Other paths may reach the temp dir, which is writable; the snapshot covers them.
        let in_workspace = result["path"].as_str().unwrap().starts_with("/workspace/");
        if read_only && write && in_workspace {
            assert!(
                result["write"].as_str().unwrap().starts_with("err"),
                "write to a read-only preopen was allowed: {result}"
            );
        }
    }
    assert_eq!(
        after, before,
        "something outside the jail changed (read-only: {read_only}); paths: {paths:#?}"
    );
    assert_eq!(
        host_files(&names),
        host_before,
        "a file appeared on the host; paths: {paths:#?}"
    );

    // The control: the jail itself works.
    let control = &results[0];
    assert_eq!(control["read"], json!("ok: inside "), "{control}");
    match (write, read_only) {
        (false, _) => assert_eq!(control["write"], Value::Null),
        (true, false) => assert_eq!(control["write"], json!("ok")),
        (true, true) => assert!(control["write"].as_str().unwrap().starts_with("err")),
    }
    results[1..].to_vec()
}

// Generated paths.

fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

/// A component in the middle of a path: mostly a way to move (dots, directories and the
/// symlinks to directories, in and out of the jail), so that paths resolve deep enough to be
/// interesting; sometimes a name that is not there, encoded or over-long.
fn step() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just("..".to_owned()),
        2 => prop::sample::select(owned(&[".", "", "/"])),
        5 => prop::sample::select(owned(&["sub", "sub", "inside-link"])),
        2 => Just("up".to_owned()),
        4 => prop::sample::select(owned(&[
            "up2", "a", "b", "outside", "abs-outside", "etc", "inside-abs", "loop1", "self",
        ])),
        1 => odd_name(),
    ]
}

/// The last component: mostly a file, in the jail or outside it, or a dangling symlink.
fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(owned(&[
            "jail-file", "jail-file", "secret.txt", "passwd", "new-outside", "new-abs", "created.txt",
            "new-file",
        ])),
        2 => step(),
    ]
}

/// Names that are not there, or not what they seem.
fn odd_name() -> impl Strategy<Value = String> {
    let names = owned(&[
        "workspace",
        "tmp",
        "jail",
        "d00",
        "%2e%2e",
        ".%2e",
        "..%2f..",
        "..\\..",
        "...",
        " ..",
        ".. ",
        "loop2",
    ]);
    prop_oneof![
        4 => prop::sample::select(names),
        1 => prop::sample::select(vec!["n".repeat(255), "n".repeat(256), "é".repeat(200)]),
        2 => "\\PC{1,6}",
    ]
}

/// A path: up to [`MAX_COMPONENTS`] components joined with `/`, under `/workspace` mostly,
/// or `/tmp`, `/` or nothing.
fn guest_path() -> impl Strategy<Value = String> {
    let prefix = prop_oneof![
        12 => Just("/workspace/"),
        1 => Just("/tmp/"),
        1 => Just("/"),
        1 => Just(""),
    ];
    let steps = prop::collection::vec(step(), 0..MAX_COMPONENTS);
    (prefix, steps, leaf()).prop_map(|(prefix, mut components, leaf)| {
        components.push(leaf);
        prefix.to_owned() + &components.join("/")
    })
}

/// The paths of one call: 32 on average, one call being far dearer than one path; a failure
/// shrinks to 8 paths, the simplest of which is [`CONTROL`].
fn batch() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(guest_path(), 8..=56)
}

fn perms() -> impl Strategy<Value = DirPerms> {
    prop_oneof![Just(DirPerms::ReadWrite), Just(DirPerms::ReadOnly)]
}

/// A fixed seed keeps the run reproducible; `PROPTEST_RNG_SEED` and `PROPTEST_CASES` explore
/// further.
fn config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    if config.rng_seed == RngSeed::Random {
        config.rng_seed = RngSeed::Fixed(0x1a11_b4e5);
    }
    config.failure_persistence = None;
    config
}

/// Checks `cases` generated batches on each of `kinds` (compiled once for the whole run), and
/// that the engines agree on every result.
fn property(kinds: &[BackendKind], cases: u32) {
    let engines: Vec<Engine> = kinds.iter().map(|&kind| Engine::new(kind)).collect();
    let host = Host::new();
    let mut runner = TestRunner::new(config(cases));
    let result = runner.run(
        &(batch(), perms(), any::<bool>()),
        |(paths, perms, write)| {
            let mut results = engines
                .iter()
                .map(|engine| check(engine, &host, &paths, perms, write));
            let first = results.next().unwrap();
            for other in results {
                prop_assert_eq!(&first, &other, "the engines disagree");
            }
            Ok(())
        },
    );
    if let Err(error) = result {
        panic!("{error}");
    }
}

#[test]
fn generated_paths_stay_in_the_jail_on_wasmtime() {
    property(&[BackendKind::Wasmtime], 48);
}

#[test]
fn generated_paths_stay_in_the_jail_on_wasmi() {
    property(&[BackendKind::Wasmi], 48);
}

/// One WASI host serves both engines: a path resolves the same way on each.
#[test]
fn both_engines_resolve_generated_paths_alike() {
    property(&[BackendKind::Wasmtime, BackendKind::Wasmi], 12);
}

// Regressions: the nastiest shapes the generator makes, each with the result it must give.

const REFUSED: &str = "err: Capabilities insufficient";
const LOOP: &str = "err: Symbolic link loop";
const MISSING: &str = "err: No such file or directory";
const IS_DIR: &str = "err: Is a directory";
const TOO_LONG: &str = "err: Filename too long";

/// `(path, what reading it gives, what writing it gives in a read-write jail)`, compared by
/// prefix; `None` where the write is not tried (it would target `/etc/passwd` if the jail
/// broke).
const NASTY: &[(&str, &str, Option<&str>)] = &[
    // Out by `..`, lexically or after going down first.
    ("/workspace/../outside/secret.txt", REFUSED, Some(REFUSED)),
    (
        "/workspace/sub/../../outside/secret.txt",
        REFUSED,
        Some(REFUSED),
    ),
    (
        "/workspace/./sub/./sub/../../../outside/secret.txt",
        REFUSED,
        Some(REFUSED),
    ),
    ("/tmp/../workspace/jail-file", REFUSED, Some(REFUSED)),
    // Out by a relative symlink, a chain of them, or a link to a link out.
    ("/workspace/outside/secret.txt", REFUSED, Some(REFUSED)),
    ("/workspace/secret.txt", REFUSED, Some(REFUSED)),
    ("/workspace/sub/secret.txt", REFUSED, Some(REFUSED)),
    ("/workspace/sub/sub/secret.txt", REFUSED, Some(REFUSED)),
    ("/workspace/a/secret.txt", REFUSED, Some(REFUSED)),
    ("/workspace/sub/up2/secret.txt", REFUSED, Some(REFUSED)),
    ("/workspace/up/jail/jail-file", REFUSED, Some(REFUSED)),
    // Out by an absolute symlink, even one that points back into the jail.
    ("/workspace/abs-outside/secret.txt", REFUSED, Some(REFUSED)),
    ("/workspace/inside-abs/jail-file", REFUSED, Some(REFUSED)),
    ("/workspace/etc/passwd", REFUSED, None),
    ("/workspace/passwd", REFUSED, None),
    ("/workspace/sub/etc/../etc/passwd", REFUSED, None),
    // A write through a dangling symlink would create a file outside.
    ("/workspace/new-outside", REFUSED, Some(REFUSED)),
    ("/workspace/new-abs", REFUSED, Some(REFUSED)),
    ("/workspace/sub/new-outside", REFUSED, Some(REFUSED)),
    // Loops.
    ("/workspace/loop1", LOOP, Some(LOOP)),
    ("/workspace/self/jail-file", LOOP, Some(LOOP)),
    // Encoded dots are names (and over-long names are refused, see `nasty`).
    (
        "/workspace/%2e%2e/outside/secret.txt",
        MISSING,
        Some(MISSING),
    ),
    (
        "/workspace/..%2f../outside/secret.txt",
        MISSING,
        Some(MISSING),
    ),
    // No preopen matches: nothing to resolve against.
    ("/etc/passwd", MISSING, None),
    ("jail-file", MISSING, Some(MISSING)),
    // The same links stay inside the jail from deeper down, and `..` that stays inside works.
    ("/workspace/sub/sub/a/jail-file", "ok: inside ", Some("ok")),
    (
        "/workspace/sub/sub/up2/jail-file",
        "ok: inside ",
        Some("ok"),
    ),
    (
        "/workspace/inside-link/up/jail-file",
        "ok: inside ",
        Some("ok"),
    ),
    (
        "/workspace/sub/sub/../jail-file",
        "ok: inside sub/",
        Some("ok"),
    ),
    (
        "//workspace//sub/./jail-file",
        "ok: inside sub/",
        Some("ok"),
    ),
    (
        "workspace/sub/sub/jail-file",
        "ok: inside sub/sub/",
        Some("ok"),
    ),
    ("/workspace/.", IS_DIR, Some(IS_DIR)),
];

/// [`NASTY`], and an over-long name.
fn nasty() -> Vec<(String, &'static str, Option<&'static str>)> {
    let long = format!("/workspace/{}", "n".repeat(256));
    NASTY
        .iter()
        .map(|&(path, read, write)| (path.to_owned(), read, write))
        .chain([(long, TOO_LONG, Some(TOO_LONG))])
        .collect()
}

fn nasty_paths() -> Vec<String> {
    nasty().into_iter().map(|(path, ..)| path).collect()
}

/// The results of [`check`], by path.
fn by_path(results: Vec<Value>) -> BTreeMap<String, Value> {
    results
        .into_iter()
        .map(|r| (r["path"].as_str().unwrap().to_owned(), r))
        .collect()
}

backend_test!(nasty_paths_give_what_they_must, |kind| {
    let engine = Engine::new(kind);
    let host = Host::new();
    for perms in [DirPerms::ReadOnly, DirPerms::ReadWrite] {
        let results = by_path(check(&engine, &host, &nasty_paths(), perms, false));
        for (path, read, _) in nasty() {
            let got = results[&path]["read"].as_str().unwrap();
            assert!(got.starts_with(read), "{path} ({perms:?}): {got}");
        }
    }
    let results = by_path(check(
        &engine,
        &host,
        &nasty_paths(),
        DirPerms::ReadWrite,
        true,
    ));
    for (path, _, write) in nasty() {
        match (write, results.get(&path)) {
            (Some(write), Some(result)) => {
                let got = result["write"].as_str().unwrap();
                assert!(got.starts_with(write), "{path}: {got}");
            }
            (None, None) => {}
            (write, result) => panic!("{path}: expected {write:?}, got {result:?}"),
        }
    }
    // Read-only: every write is refused (and `check` saw nothing change).
    for (path, result) in by_path(check(
        &engine,
        &host,
        &nasty_paths(),
        DirPerms::ReadOnly,
        true,
    )) {
        let got = result["write"].as_str().unwrap();
        assert!(got.starts_with("err: "), "{path}: {got}");
    }
});
