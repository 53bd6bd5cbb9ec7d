//! What the host does with a call's temp dir after the guest is done, against a guest that
//! plants links to trip it: the host collects output files, and removes the temp dir. Every
//! case runs on both engines.
//!
//! A scratch tree holds the sandbox's temp root next to an `outside` directory and a
//! `secret.txt` file, both holding a random secret. The probe's `plant` op makes directories,
//! files, symlinks (relative and absolute, to files and to directories, chains of them) and
//! hard links where the host will look: at `/tmp/out`, inside it, at `/tmp/in`, at the temp
//! dir's other children. Then:
//! - no collected byte holds the secret, and a collected directory that is not a real
//!   directory ends the call with [`RunStatus::OutputRefused`] and no files;
//! - what the guest really wrote in a real `/tmp/out` is still collected (the cases are not
//!   met by a host that refuses everything);
//! - nothing outside the temp dir changed, and the temp root is empty after the call (removal
//!   followed no link).
//!
//! Writing through a hard link to a file outside the grants is refused too (the workspace
//! cases at the end).

mod common;

use common::{backend_test, files_of};

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use locara_sandbox::{
    BackendKind, Capabilities, Compiled, DirPerms, Limits, RunOutcome, RunStatus, Sandbox,
    SandboxConfig,
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A scratch tree with a secret outside the temp root, and the probe compiled for it.
struct Scene {
    dir: TempDir,
    secret: String,
    module: Compiled,
}

const TEMP_ROOT: &str = "temp-root";

impl Scene {
    fn new(kind: BackendKind) -> Scene {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let secret = format!("HOST-SECRET-{:016x}", random_u64());
        let root = dir.path();
        std::fs::write(root.join("secret.txt"), &secret).unwrap();
        std::fs::create_dir_all(root.join("outside/sub")).unwrap();
        std::fs::write(root.join("outside/key.secret.json"), &secret).unwrap();
        std::fs::write(root.join("outside/sub/deep.txt"), &secret).unwrap();
        std::fs::create_dir(root.join(TEMP_ROOT)).unwrap();
        let mut config = SandboxConfig::new(kind);
        config.temp_root(root.join(TEMP_ROOT));
        let wasm = std::fs::read(locara_test_artifacts::PROBE).expect("the probe guest was built");
        let module = Sandbox::new(&config)
            .expect("engine starts")
            .compile(&wasm, None)
            .expect("the probe compiles");
        Scene {
            dir,
            secret,
            module,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// An absolute host path as a guest writes it in a link: the sandbox refuses to create a
    /// link with an absolute target, so an attacker climbs to `/` with `..` first.
    fn abs(&self, name: &str) -> String {
        format!(
            "{}{}",
            "../".repeat(24),
            self.path(name)
                .display()
                .to_string()
                .trim_start_matches('/')
        )
    }

    /// Runs `plant` with `steps`, collecting `collect`, and checks what must hold whatever the
    /// steps: no secret came back, nothing outside changed, the temp root is empty.
    fn plant(&self, steps: Value, caps: Capabilities) -> RunOutcome {
        let before = snapshot(self.dir.path());
        let input = json!({"op": "plant", "steps": steps});
        let outcome = self
            .module
            .run(input.to_string().as_bytes(), &Limits::default(), &caps)
            .expect("the call starts");
        for file in &outcome.files {
            assert!(
                !String::from_utf8_lossy(&file.bytes).contains(&self.secret),
                "{} leaked the host secret: {outcome:?}",
                file.path
            );
        }
        assert!(
            !String::from_utf8_lossy(&outcome.stdout).contains(&self.secret),
            "stdout leaked the host secret"
        );
        let left: Vec<_> = std::fs::read_dir(self.path(TEMP_ROOT))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "the temp dir was not removed: {left:?}");
        assert_eq!(
            snapshot(self.dir.path()),
            before,
            "something outside the temp dir changed"
        );
        outcome
    }
}

/// Every path under `root` (links not followed) with what it is: file contents, link target,
/// or a directory.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.is_symlink() {
                format!("link -> {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                pending.push(path.clone());
                "dir".to_owned()
            } else {
                format!(
                    "file {}",
                    String::from_utf8_lossy(&std::fs::read(&path).unwrap())
                )
            };
            out.insert(path, what);
        }
    }
    out
}

fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    getrandom(&mut bytes);
    u64::from_le_bytes(bytes)
}

/// Random bytes from the OS, without a dependency: `/dev/urandom`.
fn getrandom(buf: &mut [u8]) {
    use std::io::Read as _;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .expect("/dev/urandom");
}

/// The guest's temp dir is `<temp root>/locara-call-…`: two levels up is the scratch tree.
const UP: &str = "../..";

fn collecting_out() -> Capabilities {
    Capabilities::new().collecting("out")
}

fn refused(outcome: &RunOutcome, what: &str) {
    match &outcome.status {
        RunStatus::OutputRefused(why) => assert!(
            why.contains(what) && why.contains("follows no links"),
            "the refusal names {what}: {why}"
        ),
        other => panic!("expected OutputRefused naming {what}, got {other:?}: {outcome:?}"),
    }
    assert!(outcome.files.is_empty(), "{:?}", outcome.files);
}

fn all_ok(outcome: &RunOutcome) {
    let results: Value = serde_json::from_slice(&outcome.stdout).expect("the probe reports");
    for result in results["results"].as_array().unwrap() {
        assert_eq!(result, "ok", "a planting step failed: {results}");
    }
}

backend_test!(
    out_as_a_relative_link_to_a_host_directory_is_refused,
    |kind| {
        let scene = Scene::new(kind);
        let outcome = scene.plant(
            json!([{"symlink": [format!("{UP}/outside"), "/tmp/out"]}]),
            collecting_out(),
        );
        all_ok(&outcome);
        refused(&outcome, "/tmp/out as a symbolic link");
    }
);

backend_test!(out_as_a_link_to_an_absolute_host_path_is_refused, |kind| {
    let scene = Scene::new(kind);
    // The attack of the issue: `..` up to `/`, then a host path, to a directory or a file.
    for target in [scene.abs("outside"), scene.abs("secret.txt")] {
        let outcome = scene.plant(json!([{"symlink": [target, "/tmp/out"]}]), collecting_out());
        all_ok(&outcome);
        refused(&outcome, "/tmp/out as a symbolic link");
    }
    // A link with an absolute target is refused when it is made; were it made, the host would
    // refuse it like any other.
    let absolute = scene.path("outside").display().to_string();
    let outcome = scene.plant(
        json!([{"symlink": [absolute, "/tmp/out"]}]),
        collecting_out(),
    );
    assert!(outcome.files.is_empty(), "{:?}", outcome.files);
});

backend_test!(out_as_a_chain_of_links_is_refused, |kind| {
    let scene = Scene::new(kind);
    let outcome = scene.plant(
        json!([
            {"symlink": [format!("{UP}/outside"), "/tmp/b"]},
            {"symlink": ["b", "/tmp/a"]},
            {"symlink": ["a", "/tmp/out"]},
        ]),
        collecting_out(),
    );
    all_ok(&outcome);
    refused(&outcome, "/tmp/out as a symbolic link");
});

backend_test!(out_as_a_file_is_refused, |kind| {
    let scene = Scene::new(kind);
    let outcome = scene.plant(
        json!([{"write": ["/tmp/out", "not a dir"]}]),
        collecting_out(),
    );
    all_ok(&outcome);
    refused(&outcome, "/tmp/out as not a directory");
});

backend_test!(
    a_link_among_the_collected_directory_parents_is_refused,
    |kind| {
        let scene = Scene::new(kind);
        // `outside` has a `sub`, so following `/tmp/out` would find `/tmp/out/sub`.
        let outcome = scene.plant(
            json!([{"symlink": [scene.abs("outside"), "/tmp/out"]}]),
            Capabilities::new().collecting("out/sub"),
        );
        all_ok(&outcome);
        refused(&outcome, "/tmp/out as a symbolic link");
    }
);

backend_test!(
    links_inside_out_are_skipped_and_real_files_collected,
    |kind| {
        let scene = Scene::new(kind);
        let outcome = scene.plant(
            json!([
                {"mkdir": "/tmp/out/real"},
                {"write": ["/tmp/out/real/made.txt", "made by the guest"]},
                {"write": ["/tmp/out/top.txt", "top"]},
                {"symlink": [scene.abs("secret.txt"), "/tmp/out/abs-file"]},
                {"symlink": [format!("../{UP}/secret.txt"), "/tmp/out/rel-file"]},
                {"symlink": [scene.abs("outside"), "/tmp/out/abs-dir"]},
                {"symlink": [format!("../../{UP}/outside"), "/tmp/out/real/rel-dir"]},
                {"symlink": ["top.txt", "/tmp/out/inner-link"]},
                {"symlink": ["real", "/tmp/out/guest-dir-link"]},
                // A hard link of the guest's own file is the guest's own file.
                {"hardlink": ["/tmp/out/top.txt", "/tmp/out/top-again.txt"]},
            ]),
            collecting_out(),
        );
        all_ok(&outcome);
        assert_eq!(outcome.status, RunStatus::Exited(0));
        let files = files_of(&outcome);
        assert_eq!(
            files,
            [
                ("real/made.txt", b"made by the guest".as_slice()),
                ("top-again.txt", b"top".as_slice()),
                ("top.txt", b"top".as_slice()),
            ]
        );
    }
);

backend_test!(a_link_at_tmp_in_is_never_followed, |kind| {
    let scene = Scene::new(kind);
    let staged = Capabilities::new().with_temp_file("in/data", b"staged".to_vec());
    // The staged input replaced by a link out: neither collection nor removal follows it.
    let outcome = scene.plant(
        json!([
            {"rmdir": "/tmp/in"},
            {"symlink": [format!("{UP}/outside"), "/tmp/in"]},
            {"mkdir": "/tmp/out"},
            {"write": ["/tmp/out/ok.txt", "ok"]},
        ]),
        staged.clone().collecting("out"),
    );
    all_ok(&outcome);
    assert_eq!(outcome.status, RunStatus::Exited(0));
    assert_eq!(outcome.files.len(), 1);
    // Collecting from `/tmp/in` itself, once it is a link, is refused.
    let outcome = scene.plant(
        json!([
            {"rmdir": "/tmp/in"},
            {"symlink": [scene.abs("outside"), "/tmp/in"]},
        ]),
        staged.collecting("in"),
    );
    all_ok(&outcome);
    refused(&outcome, "/tmp/in as a symbolic link");
});

backend_test!(
    links_at_the_temp_dir_children_survive_removal_untouched,
    |kind| {
        let scene = Scene::new(kind);
        // `Scene::plant` checks that the outside tree is unchanged and the temp root empty: the
        // removal of the temp dir deleted the links, never what they point at.
        let outcome = scene.plant(
            json!([
                {"symlink": [scene.abs("outside"), "/tmp/dir-link"]},
                {"symlink": [format!("{UP}/outside/sub"), "/tmp/rel-dir-link"]},
                {"symlink": [scene.abs("secret.txt"), "/tmp/file-link"]},
                {"mkdir": "/tmp/nest/deeper"},
                {"symlink": [scene.abs("outside"), "/tmp/nest/deeper/link"]},
            ]),
            Capabilities::new(),
        );
        all_ok(&outcome);
        assert_eq!(outcome.status, RunStatus::Exited(0));
    }
);

backend_test!(links_planted_by_one_call_do_not_reach_the_next, |kind| {
    let scene = Scene::new(kind);
    // Two calls of a chain share no temp dir: the second starts from a fresh, empty one, so a
    // link the first left cannot be where the second's files are collected.
    let first = scene.plant(
        json!([{"symlink": [format!("{UP}/outside"), "/tmp/out"]}]),
        Capabilities::new(),
    );
    all_ok(&first);
    let second = scene.plant(
        json!([{"write": ["/tmp/probe.txt", "x"]}]),
        collecting_out(),
    );
    all_ok(&second);
    assert_eq!(second.status, RunStatus::Exited(0));
    assert!(second.files.is_empty(), "{:?}", second.files);
});

/// A workspace holding `planted`, a hard link (made by someone else before the call) to
/// `outside/key.secret.json`.
fn workspace_with_hard_link(scene: &Scene) -> PathBuf {
    let workspace = scene.path("workspace");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::hard_link(
        scene.path("outside/key.secret.json"),
        workspace.join("planted"),
    )
    .unwrap();
    std::fs::write(workspace.join("own.txt"), "own").unwrap();
    workspace
}

backend_test!(writes_through_a_planted_hard_link_are_refused, |kind| {
    let scene = Scene::new(kind);
    let workspace = workspace_with_hard_link(&scene);
    let caps = Capabilities::new().preopened_dir(&workspace, "/workspace", DirPerms::ReadWrite);
    let outcome = scene
        .module
        .run(
            json!({"op": "paths", "paths": ["/workspace/planted", "/workspace/own.txt"], "content": "overwritten"})
                .to_string()
                .as_bytes(),
            &Limits::default(),
            &caps,
        )
        .unwrap();
    let results = serde_json::from_slice::<Value>(&outcome.stdout).unwrap()["results"].clone();
    // Reading the linked file is reading the workspace; writing through the link is refused.
    assert!(
        results[0]["write"].as_str().unwrap().starts_with("err"),
        "{results}"
    );
    assert_eq!(results[1]["write"], "ok", "{results}");
    assert_eq!(
        std::fs::read_to_string(scene.path("outside/key.secret.json")).unwrap(),
        scene.secret,
        "the file behind the hard link is unchanged (not even truncated)"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("own.txt")).unwrap(),
        "overwritten"
    );
    // Linking the planted file into the temp dir and writing there is refused the same way.
    let outcome = scene
        .module
        .run(
            json!({"op": "hardlink", "path": "/workspace/planted", "content": "/tmp/again"})
                .to_string()
                .as_bytes(),
            &Limits::default(),
            &caps,
        )
        .unwrap();
    let result: Value = serde_json::from_slice(&outcome.stdout).unwrap();
    assert_eq!(result["link"], "ok", "{result}");
    assert!(
        result["append"].as_str().unwrap().starts_with("err"),
        "{result}"
    );
    assert_eq!(
        std::fs::read_to_string(scene.path("outside/key.secret.json")).unwrap(),
        scene.secret
    );
});

backend_test!(
    a_workspace_swapped_for_a_link_after_its_check_is_not_preopened,
    |kind| {
        let scene = Scene::new(kind);
        let granted = scene.path("granted");
        std::fs::create_dir_all(granted.join("project")).unwrap();
        let root = std::fs::canonicalize(&granted).unwrap();
        let selected = root.join("project");
        let caps = |perms| {
            Capabilities::new().preopened_dir_beneath(&root, &selected, "/workspace", perms)
        };
        let list = json!({"op": "list", "path": "/workspace"});
        let run = |caps: &Capabilities| {
            scene
                .module
                .run(list.to_string().as_bytes(), &Limits::default(), caps)
        };
        // Checked as a directory of the grant, then, before the call opens it, replaced by a link
        // out (as an earlier call with write access, or another process, could do).
        assert!(run(&caps(DirPerms::ReadOnly)).is_ok());
        std::fs::remove_dir(&selected).unwrap();
        std::os::unix::fs::symlink(scene.path("outside"), &selected).unwrap();
        for perms in [DirPerms::ReadOnly, DirPerms::ReadWrite] {
            match run(&caps(perms)) {
                Err(locara_sandbox::Error::Preopen { source, .. }) => assert!(
                    source.to_string().contains("a link or `..` leads out"),
                    "{source}"
                ),
                other => panic!("the link was followed: {other:?}"),
            }
        }
        // A path that is not below the root is refused too.
        let elsewhere = Capabilities::new().preopened_dir_beneath(
            &root,
            scene.path("outside"),
            "/workspace",
            DirPerms::ReadOnly,
        );
        assert!(matches!(
            run(&elsewhere),
            Err(locara_sandbox::Error::Preopen { .. })
        ));
    }
);

// Generated link structures: the guest builds a random tree of directories, files and links
// (to directories and files outside the temp dir, climbing by `..` from any depth, chained,
// dangling, looping, and inside the temp dir) under and around `/tmp/out`, and the host collects
// `/tmp/out` or a directory below it. Whatever the tree, on both engines: no byte from outside
// comes back, every collected file holds exactly what the guest wrote at a path it can name,
// the call either succeeds or is `OutputRefused`, nothing outside changes, and the temp dir is
// gone. Seeded; `PROPTEST_CASES` and `PROPTEST_RNG_SEED` explore further.

mod generated {
    use super::*;
    use proptest::{
        prelude::*,
        test_runner::{Config as ProptestConfig, RngSeed, TestRunner},
    };

    /// Where the guest plants: `/tmp/out` itself, below it, beside it.
    fn place() -> impl Strategy<Value = String> {
        let names = prop::sample::select(vec!["a", "b", "c", "out"]);
        (
            prop::sample::select(vec![
                "/tmp/out",
                "/tmp/out/a",
                "/tmp/out/a/b",
                "/tmp",
                "/tmp/c",
            ]),
            names,
        )
            .prop_map(|(dir, name)| {
                if dir == "/tmp" && name == "out" {
                    "/tmp/out".to_owned()
                } else {
                    format!("{dir}/{name}")
                }
            })
    }

    /// A link target, as the guest writes it; `@` marks a host path, reached by climbing to `/`.
    fn target() -> impl Strategy<Value = String> {
        prop_oneof![
            // Out of the temp dir, relative, from whatever depth the link sits at.
            4 => (0usize..6, prop::sample::select(vec!["outside", "secret.txt", "outside/sub", "outside/key.secret.json", "temp-root", "nowhere"]))
                .prop_map(|(up, to)| format!("{}{to}", "../".repeat(up))),
            // A host path, climbed to from `/`.
            3 => prop::sample::select(vec!["@outside", "@secret.txt", "@outside/sub", "@outside/sub/deep.txt"]).prop_map(str::to_owned),
            // Inside the temp dir, chains and loops.
            3 => prop::sample::select(vec!["a", "b", "../a", "out", "../out", ".", "..", "c", "a/b"]).prop_map(str::to_owned),
        ]
    }

    #[derive(Debug, Clone)]
    enum Plant {
        Mkdir(String),
        Write(String),
        Link(String, String),
    }

    fn plant() -> impl Strategy<Value = Plant> {
        prop_oneof![
            2 => place().prop_map(Plant::Mkdir),
            2 => place().prop_map(Plant::Write),
            4 => (target(), place()).prop_map(|(t, l)| Plant::Link(t, l)),
        ]
    }

    fn config() -> ProptestConfig {
        let mut config = ProptestConfig::default();
        if std::env::var_os("PROPTEST_CASES").is_none() {
            config.cases = 96;
        }
        if config.rng_seed == RngSeed::Random {
            config.rng_seed = RngSeed::Fixed(0x0c0_11ec7);
        }
        config.failure_persistence = None;
        config
    }

    #[test]
    fn no_generated_link_structure_leaks_through_collection() {
        let scenes: Vec<Scene> = [BackendKind::Wasmtime, BackendKind::Wasmi]
            .into_iter()
            .map(Scene::new)
            .collect();
        let mut runner = TestRunner::new(config());
        // What the cases came to: refusals, successes with files. Both must occur, or the
        // generator is not reaching what it is meant to test.
        let (refused, collected) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
        let strategy = (
            prop::collection::vec(plant(), 1..14),
            prop::sample::select(vec!["out", "out", "out/a", "c"]),
        );
        let result = runner.run(&strategy, |(plants, collect)| {
            let mut ends = Vec::new();
            for scene in &scenes {
                let steps: Vec<Value> = plants
                    .iter()
                    .map(|plant| match plant {
                        Plant::Mkdir(p) => json!({"mkdir": p}),
                        // The content names the path written, so a collected file can be told
                        // to be the guest's own.
                        Plant::Write(p) => json!({"write": [p, format!("guest wrote {p}")]}),
                        Plant::Link(t, l) => {
                            let t = match t.strip_prefix('@') {
                                Some(host) => scene.abs(host),
                                None => t.clone(),
                            };
                            json!({"symlink": [t, l]})
                        }
                    })
                    .collect();
                // `Scene::plant` checks: no secret in the files or stdout, nothing outside
                // changed, the temp dir removed.
                let outcome = scene.plant(json!(steps), Capabilities::new().collecting(collect));
                match &outcome.status {
                    RunStatus::Exited(0) => {}
                    RunStatus::OutputRefused(why) => {
                        refused.set(refused.get() + 1);
                        prop_assert!(why.contains("follows no links"), "{}", why);
                        prop_assert!(outcome.files.is_empty());
                    }
                    other => prop_assert!(false, "unexpected end {:?}: {:?}", other, outcome),
                }
                for file in &outcome.files {
                    let text = String::from_utf8_lossy(&file.bytes);
                    prop_assert!(
                        text.starts_with("guest wrote /tmp/"),
                        "{} holds {:?}, which the guest did not write",
                        file.path,
                        text
                    );
                }
                if !outcome.files.is_empty() {
                    collected.set(collected.get() + 1);
                }
                let files: Vec<_> = outcome
                    .files
                    .iter()
                    .map(|f| (f.path.clone(), f.bytes.clone()))
                    .collect();
                ends.push((format!("{:?}", outcome.status), files));
            }
            prop_assert_eq!(&ends[0], &ends[1], "the engines disagree");
            Ok(())
        });
        if let Err(error) = result {
            panic!("{error}");
        }
        assert!(
            refused.get() > 0 && collected.get() > 0,
            "refused {} and collected files in {} calls",
            refused.get(),
            collected.get()
        );
    }
}
