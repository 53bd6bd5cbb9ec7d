//! `locara dev [PATH] --key SECRET.json`: the edit-run loop of a tool author. Each cycle builds
//! the tool crate as `locara build` does (`authoring::build_tool`), signs and publishes it as
//! `locara publish` does (`publish::prepare_template`, `publish::publish_prepared`) under a new
//! build-numbered pre-release version, `<version>-dev.<n>`, and pins that version in the home's
//! lockfile, so `locara run ID` in another terminal runs the new code. It prints one line per
//! cycle and then polls the crate's `Cargo.toml`, `manifest.json` and `src/` until something
//! changes. A failed build is reported and waited out, not fatal.
//!
//! Why a new version per build rather than replacing one: a published `id@version` must keep
//! its bytes once a host may have pinned them. The lockfile refuses a pinned version whose hashes
//! changed (`lock_mismatch`) and a version older than its pin (`Rollback`), and `dev` weakens
//! neither: each build is a version the registry never held, higher than the last, so pinning it
//! moves the pin forward, which the lockfile's ordinary rules allow (`Registry::lock`, never
//! `lock_forced`). `0.1.0-dev.7` sorts below `0.1.0`, so the release published afterwards is
//! newer than every dev build.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, bail, format_err};
use locara_manifest::{ToolName, Version};
use locara_registry::{Digest, SigningKey};
use serde_json::{Value, json};

use crate::{
    authoring::{self, Built, MANIFEST},
    context::Context,
    output, publish,
};

/// How often the crate's files are looked at.
const POLL: Duration = Duration::from_millis(250);

/// The pre-release identifier that marks a build of `locara dev`.
const DEV: &str = "dev";

/// `locara dev [PATH] --key SECRET.json`. Runs until it is stopped (Ctrl-C): every file it
/// writes into the home is written atomically, so stopping it mid-cycle leaves no torn file.
pub(crate) fn dev(ctx: &Context, path: &Path, key: &Path) -> anyhow::Result<ExitCode> {
    authoring::check_crate(path)?;
    let key = SigningKey::read_file(key)?;
    // Each build is pinned for `locara run`, which verifies it: refuse to start with a key the
    // home would refuse, instead of failing every cycle.
    if let Some(problem) =
        publish::untrusted(ctx, key.key_id(), &format!("{}.pub.json", key.publisher()))
    {
        bail!("{problem}");
    }
    eprintln!(
        "locara dev: building {} on every change to Cargo.toml, {MANIFEST} or src/ (Ctrl-C stops)",
        path.display()
    );
    let files = Watched::new(path);
    let mut session = Session { key, last: None };
    loop {
        let mut baseline = files.snapshot();
        let started = Instant::now();
        let (event, built) = session.cycle(ctx, path);
        // The manifest.json that the build itself rewrote is not a change to rebuild for; a
        // change to any other file during the build is.
        if let Some(built) = built.filter(|b| b.manifest_rewritten) {
            baseline.refresh(&built.manifest_path);
        }
        event.report(ctx, started.elapsed())?;
        files.wait_for_change(&baseline);
    }
}

/// What one cycle came to.
enum Event {
    /// A new build was published and pinned.
    Published {
        tool: String,
        id: ToolName,
        artifact: Digest,
        size: usize,
    },
    /// The build is what was last published: nothing to do.
    Unchanged { tool: String },
    /// The build or the publish failed.
    Failed {
        stage: &'static str,
        error: anyhow::Error,
    },
}

impl Event {
    /// Prints the cycle's one line (with `--json`, one JSON object).
    fn report(&self, ctx: &Context, elapsed: Duration) -> anyhow::Result<()> {
        let seconds = (elapsed.as_secs_f64() * 10.0).round() / 10.0;
        if ctx.json {
            let value = match self {
                Event::Published {
                    tool,
                    id,
                    artifact,
                    size,
                } => json!({
                    "event": "published", "tool": tool, "id": id, "artifact_sha256": artifact.to_hex(),
                    "size_bytes": size, "seconds": seconds,
                }),
                Event::Unchanged { tool } => {
                    json!({"event": "unchanged", "tool": tool, "seconds": seconds})
                }
                Event::Failed { stage, error } => json!({
                    "event": "failed", "stage": stage, "error": format!("{error:#}"), "seconds": seconds,
                }),
            };
            return output::stdout(&format!("{value}\n"));
        }
        let line = match self {
            Event::Published {
                tool,
                id,
                artifact,
                size,
            } => format!(
                "published {tool} (sha256 {}…, {size} bytes) in {seconds} s; `locara run {id}` runs it",
                &artifact.to_hex()[..12]
            ),
            Event::Unchanged { tool } => {
                format!("unchanged: {tool} is already this build ({seconds} s)")
            }
            Event::Failed { stage, error } => format!(
                "{stage} failed: {}; waiting for a change",
                format!("{error:#}").replace('\n', " ")
            ),
        };
        output::stdout(&format!("{line}\n"))
    }
}

/// What a `locara dev` run remembers between cycles.
struct Session {
    key: SigningKey,
    /// The last build published and pinned: its module and the manifest template it was
    /// published with (compared as they are: hashing is the registry's), and its `id@version`.
    last: Option<((Vec<u8>, String), String)>,
}

impl Session {
    /// Builds, then publishes and pins; the build, when there was one, is returned too.
    fn cycle(&mut self, ctx: &Context, path: &Path) -> (Event, Option<Built>) {
        let built = match authoring::build_tool(path) {
            Ok(built) => built,
            Err(error) => {
                let event = Event::Failed {
                    stage: "build",
                    error,
                };
                return (event, None);
            }
        };
        let event = self
            .publish(ctx, &built)
            .unwrap_or_else(|error| Event::Failed {
                stage: "publish",
                error,
            });
        (event, Some(built))
    }

    /// Publishes `built` as the next dev version of its crate's version and pins it.
    fn publish(&mut self, ctx: &Context, built: &Built) -> anyhow::Result<Event> {
        let mut template = publish::read_template(&built.manifest_path)?;
        let fingerprint = (
            built.wasm.clone(),
            Value::Object(template.clone()).to_string(),
        );
        if let Some((last, tool)) = &self.last
            && *last == fingerprint
        {
            return Ok(Event::Unchanged { tool: tool.clone() });
        }
        let field = |name: &str| {
            template
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    format_err!("{} has no `{name}` string", built.manifest_path.display())
                })
        };
        let id: ToolName = field("id")?.parse()?;
        let base: Version = field("version")?.parse()?;

        // Refuse before publishing anything when the pin is already ahead of this crate's
        // version: pinning would be a rollback, which the lockfile refuses, and so do we.
        let registry = ctx.locked_registry()?;
        let pinned = registry
            .lockfile()
            .and_then(|lockfile| lockfile.get(&id).map(|pin| pin.version.clone()));
        let version = dev_version(&base, next_build(ctx, &id, &base, pinned.as_ref())?)?;
        if let Some(pinned) = pinned.filter(|pinned| *pinned > version) {
            bail!(
                "{} pins {id}@{pinned}, newer than this build ({version}): `locara dev` never rolls a pin back; raise the crate's version in Cargo.toml above {pinned}",
                ctx.lockfile().display(),
            );
        }

        template.insert("version".to_owned(), Value::String(version.to_string()));
        let (wasm, _) = publish::module_to_publish(id.as_str(), built.wasm.clone())?;
        let manifest = publish::prepare_template(&built.manifest_path, template, &wasm)?;
        let published = publish::publish_prepared(ctx, &self.key, &manifest, &wasm)?;
        let tool = format!("{}@{}", published.id, published.version);
        registry
            .lock(&id, &version)
            .with_context(|| format!("published {tool} but cannot pin it"))?;
        self.last = Some((fingerprint, tool.clone()));
        Ok(Event::Published {
            tool,
            id,
            artifact: published.artifact_digest,
            size: wasm.len(),
        })
    }
}

/// The pre-release part of `base`'s dev builds, up to the build number: `dev.` for a release,
/// `<pre>.dev.` for a pre-release (`1.0.0-beta.1` builds as `1.0.0-beta.1.dev.<n>`).
fn dev_prefix(base: &Version) -> String {
    let pre = base.as_semver().pre.as_str();
    if pre.is_empty() {
        format!("{DEV}.")
    } else {
        format!("{pre}.{DEV}.")
    }
}

/// `base`'s dev build number `build`: `0.1.0` → `0.1.0-dev.<build>`.
fn dev_version(base: &Version, build: u64) -> anyhow::Result<Version> {
    let semver = base.as_semver();
    let mut text = format!(
        "{}.{}.{}-{}{build}",
        semver.major,
        semver.minor,
        semver.patch,
        dev_prefix(base)
    );
    if !semver.build.is_empty() {
        text.push('+');
        text.push_str(semver.build.as_str());
    }
    Ok(text.parse()?)
}

/// One more than the highest dev build of `base` that the registry holds or the lockfile pins
/// (1 when none), so a dev build never replaces a version that was published, pinned or not,
/// and is never older than a dev build pinned before.
fn next_build(
    ctx: &Context,
    id: &ToolName,
    base: &Version,
    pinned: Option<&Version>,
) -> anyhow::Result<u64> {
    let build_of = |version: &Version| dev_build(base, version);
    let mut highest = pinned.and_then(build_of).unwrap_or(0);
    // The registry's layout is `tools/<id>/<version>/`; only the directory names are read here.
    let dir = ctx.registry_dir().join("tools").join(id.as_str());
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(highest + 1),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", dir.display())),
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        if let Some(Ok(version)) = entry.file_name().to_str().map(str::parse::<Version>)
            && let Some(build) = build_of(&version)
        {
            highest = highest.max(build);
        }
    }
    Ok(highest + 1)
}

/// `version`'s build number when it is a dev build of `base` (`0.1.0-dev.7` of `0.1.0`: 7).
fn dev_build(base: &Version, version: &Version) -> Option<u64> {
    let (b, v) = (base.as_semver(), version.as_semver());
    if (v.major, v.minor, v.patch) != (b.major, b.minor, b.patch) {
        return None;
    }
    v.pre
        .as_str()
        .strip_prefix(&dev_prefix(base))
        .and_then(|n| n.parse().ok())
}

/// The files of a tool crate whose change calls for a rebuild: `Cargo.toml`, `manifest.json`
/// and every file under `src/` (hidden files and editors' `~` backups aside). `target/` and
/// anything else outside `src/` are not looked at.
struct Watched {
    root: PathBuf,
}

/// What a file looked like: its modification time and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

/// Every watched file's stamp at one moment; a missing file has none.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot(BTreeMap<PathBuf, Stamp>);

impl Snapshot {
    /// Takes `path`'s stamp anew: a change the loop made itself.
    fn refresh(&mut self, path: &Path) {
        match stamp(path) {
            Some(stamp) => self.0.insert(path.to_owned(), stamp),
            None => self.0.remove(path),
        };
    }
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    meta.is_file().then(|| Stamp {
        modified: meta.modified().ok(),
        len: meta.len(),
    })
}

impl Watched {
    fn new(root: &Path) -> Watched {
        Watched {
            root: root.to_owned(),
        }
    }

    fn snapshot(&self) -> Snapshot {
        let mut files = BTreeMap::new();
        for name in ["Cargo.toml", MANIFEST] {
            let path = self.root.join(name);
            if let Some(stamp) = stamp(&path) {
                files.insert(path, stamp);
            }
        }
        walk(&self.root.join("src"), &mut files);
        Snapshot(files)
    }

    /// Returns once the files differ from `baseline` and have stayed the same for one poll (an
    /// editor saving several files, or writing one in steps, is one change).
    fn wait_for_change(&self, baseline: &Snapshot) {
        loop {
            std::thread::sleep(POLL);
            let mut now = self.snapshot();
            if now == *baseline {
                continue;
            }
            loop {
                std::thread::sleep(POLL);
                let again = self.snapshot();
                if again == now {
                    return;
                }
                now = again;
            }
        }
    }
}

/// Stamps every file under `dir`, following links to files but not to directories (a link
/// loop must not hang the loop).
fn walk(dir: &Path, files: &mut BTreeMap<PathBuf, Stamp>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name.ends_with('~') {
            continue;
        }
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => walk(&path, files),
            Ok(_) => {
                if let Some(stamp) = stamp(&path) {
                    files.insert(path, stamp);
                }
            }
            Err(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(text: &str) -> Version {
        text.parse().unwrap()
    }

    #[test]
    fn dev_versions_are_pre_releases_of_the_crate_version_that_sort_by_build() {
        assert_eq!(
            dev_version(&version("0.1.0"), 3).unwrap(),
            version("0.1.0-dev.3")
        );
        assert_eq!(
            dev_version(&version("1.0.0-beta.1"), 2).unwrap(),
            version("1.0.0-beta.1.dev.2")
        );
        assert_eq!(
            dev_version(&version("0.2.0+abc"), 1).unwrap(),
            version("0.2.0-dev.1+abc")
        );
        // Numerically, past 9; below the release itself; above the previous release.
        let nine = dev_version(&version("0.1.0"), 9).unwrap();
        let ten = dev_version(&version("0.1.0"), 10).unwrap();
        assert!(nine < ten);
        assert!(ten < version("0.1.0"));
        assert!(version("0.0.9") < nine);

        let base = version("0.1.0");
        assert_eq!(dev_build(&base, &ten), Some(10));
        assert_eq!(dev_build(&base, &version("0.1.0")), None);
        assert_eq!(dev_build(&base, &version("0.2.0-dev.3")), None);
        assert_eq!(dev_build(&base, &version("0.1.0-rc.1")), None);
        let beta = version("1.0.0-beta.1");
        assert_eq!(dev_build(&beta, &version("1.0.0-beta.1.dev.4")), Some(4));
        assert_eq!(dev_build(&beta, &version("1.0.0-dev.4")), None);
    }
}
