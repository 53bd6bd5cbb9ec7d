//! `audio.detect-silence`: finds the silent and the sounding stretches of an audio file.
//!
//! The file (WAV with PCM or float samples, FLAC, Ogg Vorbis or MP3) is decoded with Symphonia
//! packet by packet and cut into consecutive analysis frames of `frame_ms` milliseconds (10 by
//! default; the last frame may be shorter). A frame's level is its RMS in dBFS,
//! `20 * log10(sqrt(mean(x²)))` with samples in [-1, 1] (a full-scale sine is -3 dBFS), over the
//! channels chosen by `channel`: their average (`mix`, the default), the loudest one
//! (`loudest`), or one channel by index. A frame is silent when its level is below
//! `threshold_db`. A run of silent frames lasting at least `min_silence_ms` is a silence,
//! including one at the very start or end; everything between silences is a sound. Shorter quiet
//! gaps stay inside the sounds around them.
//!
//! Times are integer milliseconds from the start of the decoded audio, rounded from exact sample
//! positions, so region boundaries are accurate to one frame. Memory stays flat: only the current
//! packet and the list of regions are held, never the samples. For MP3, the encoder delay and
//! padding recorded in a LAME/Xing header are trimmed (gapless decoding), so times match the
//! source audio; without such a header (sox writes none) the encoder and decoder delay remain:
//! 576 + 529 = 1105 samples, i.e. times about 25 ms late at 44.1 kHz, 50 ms at 22.05 kHz.

use std::io::{Cursor, Read, SeekFrom};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use symphonia::core::audio::AudioBufferRef;
use symphonia::core::codecs::{CODEC_TYPE_NULL, DecoderOptions};
use symphonia::core::conv::IntoSample;
use symphonia::core::errors::Error as SymError;
use symphonia::core::formats::FormatOptions;
use symphonia::core::io::{MediaSource, MediaSourceStream};
use symphonia::core::meta::MetadataOptions;
use symphonia::core::probe::Hint;

use locara_pdk::{JsonSchema, tool};

use crate::abi::{self, ToolError};
use crate::blob::{Blob, OutDir};

#[cfg(test)]
mod tests;

/// The longest audio analysed, in milliseconds (4 hours).
pub(crate) const MAX_DURATION_MS: u64 = 4 * 3600 * 1000;
/// The most samples (all channels together) analysed: about 22 minutes of 44.1 kHz stereo or
/// 2 hours of 16 kHz mono. Decoding MP3 costs about 610 fuel units per sample in the guest
/// (Vorbis 480, FLAC 240, WAV 150), so this stays well inside the manifest's fuel.
pub(crate) const MAX_SAMPLES: u64 = 120_000_000;
/// The largest `{"base64"}` source accepted (a path is streamed and has no size limit).
pub(crate) const MAX_BASE64_BYTES: u64 = 16 * 1024 * 1024;
/// The most silences listed; past it the result is truncated.
pub(crate) const MAX_REGIONS: usize = 10_000;
/// Levels below this, including digital silence, are reported as this.
pub(crate) const FLOOR_DB: f64 = -120.0;
/// How many undecodable packets are skipped before giving up on the file.
const MAX_DECODE_ERRORS: u64 = 1000;

/// `audio.detect-silence`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The audio file to analyse: WAV (PCM or float), FLAC, Ogg Vorbis or MP3, detected from its content (the file name does not matter). Other formats (Opus, AAC/M4A, AIFF, WebM, ...) are refused with a message naming the format found; convert them first.
    source: Blob,
    /// The level in dBFS below which a frame counts as silent (its RMS level, 0 = full scale). Default -40, right for most speech recordings. Use -50 to -60 for clean studio audio where quiet speech would otherwise count as silence, or -35 to -30 for a noisy recording where background noise hides the pauses. Look at quietest_frame_db and loudest_frame_db in a first result to choose.
    #[serde(default = "default_threshold_db")]
    #[schemars(range(min = -120.0, max = 0.0))]
    threshold_db: f64,
    /// The shortest silence reported, in milliseconds; quieter gaps that are shorter stay part of the sound around them. Default 500. Use 200-300 to find pauses between words or phrases, 1000-2000 for breaks between sections.
    #[serde(default = "default_min_silence_ms")]
    #[schemars(range(max = MAX_DURATION_MS))]
    min_silence_ms: u64,
    /// The length of the analysis frames in milliseconds, i.e. the time resolution of the result. Default 10; rarely needs changing.
    #[serde(default = "default_frame_ms")]
    #[schemars(range(min = 1, max = 1000))]
    frame_ms: u64,
    /// Which channels of a multi-channel file are measured: "mix" (default) averages all channels into mono; "loudest" treats a frame as silent only when every channel is below the threshold (safer when channels are out of phase or one is mostly empty); an integer picks one channel, counting from 0 (0 = left, 1 = right in stereo). Ignored for mono files except that only 0 is a valid index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "channel_schema")]
    channel: Option<Value>,
}

/// `channel`: a name or a 0-based index, which [`ChannelMode::parse`] reads.
fn channel_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "default": "mix",
        "anyOf": [
            {"type": "string", "enum": ["mix", "loudest"]},
            {"type": "integer", "minimum": 0, "maximum": 63}
        ]
    })
}

fn default_threshold_db() -> f64 {
    -40.0
}

fn default_min_silence_ms() -> u64 {
    500
}

fn default_frame_ms() -> u64 {
    10
}

/// Which channels a frame's level is measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChannelMode {
    /// The average of all channels (a mono downmix).
    Mix,
    /// Every channel separately; the frame's level is the loudest channel's.
    Loudest,
    /// One channel, by 0-based index.
    Index(usize),
}

impl ChannelMode {
    fn parse(value: Option<&Value>) -> Result<ChannelMode, ToolError> {
        match value {
            None | Some(Value::Null) => Ok(ChannelMode::Mix),
            Some(Value::String(s)) if s == "mix" => Ok(ChannelMode::Mix),
            Some(Value::String(s)) if s == "loudest" => Ok(ChannelMode::Loudest),
            Some(Value::Number(n)) if n.as_u64().is_some_and(|i| i < 64) => {
                Ok(ChannelMode::Index(n.as_u64().unwrap_or_default() as usize))
            }
            Some(other) => Err(ToolError::bad_args(format!(
                "channel must be \"mix\" (average all channels, the default), \"loudest\" (a frame is silent only when every channel is) or a 0-based channel index such as 0 for left, got {other}"
            ))),
        }
    }
}

/// A stretch of the audio, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Region {
    /// Where the stretch starts, in milliseconds from the start of the audio.
    start_ms: u64,
    /// Where the stretch ends (exclusive), in milliseconds from the start of the audio.
    end_ms: u64,
    /// end_ms - start_ms.
    duration_ms: u64,
}

/// The formats read, as the result names them.
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code, reason = "only the schema of `Output::format`")]
enum AudioFormat {
    Wav,
    Flac,
    Ogg,
    Mp3,
}

/// `audio.detect-silence`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The file's format, detected from its content.
    #[schemars(with = "AudioFormat")]
    format: &'static str,
    /// The audio codec, e.g. pcm_s16le, pcm_f32le, flac, vorbis, mp3.
    codec: String,
    /// Samples per second per channel.
    #[schemars(range(min = 1))]
    sample_rate: u32,
    /// The number of channels.
    #[schemars(range(min = 1))]
    channels: usize,
    /// The length of the decoded audio in milliseconds.
    duration_ms: u64,
    /// The analysis frame length used.
    #[schemars(range(min = 1))]
    frame_ms: u64,
    /// The silence threshold used, in dBFS.
    threshold_db: f64,
    /// The shortest silence reported, as used.
    min_silence_ms: u64,
    /// The channel handling used: "mix", "loudest" or the channel index as a string.
    channel: String,
    /// The RMS level of the loudest frame in dBFS (at most 0 for integer samples; float WAV may exceed it).
    loudest_frame_db: f64,
    /// The RMS level of the quietest frame in dBFS; -120 means digital silence or below.
    quietest_frame_db: f64,
    /// The RMS level of the whole file in dBFS.
    overall_rms_db: f64,
    /// The total length of the silences listed, in milliseconds.
    silent_ms: u64,
    /// The silences, in order: stretches of at least min_silence_ms where every frame is below threshold_db. A silence at the start begins at 0 and one at the end finishes at duration_ms.
    silences: Vec<Region>,
    /// The stretches between the silences, in order (speech, music or noise above the threshold, with any shorter quiet gaps inside them). Together with silences they cover the whole file, unless truncated.
    sounds: Vec<Region>,
    /// True when there were more than 10000 silences: only the first 10000 are listed, and the sounds only up to the last of them. Raise min_silence_ms or lower threshold_db to get a complete list.
    truncated: bool,
    /// Problems that did not stop the analysis, e.g. damaged packets that were skipped or a file cut short. Empty normally.
    warnings: Vec<String>,
}

/// Finds the silent and the sounding stretches of an audio file (WAV with PCM or float samples, FLAC, Ogg Vorbis or MP3), e.g. to find pauses between sentences, trim leading and trailing silence, or split a recording into parts. The audio is cut into frames of frame_ms milliseconds (10 by default) and each frame's loudness is measured as its RMS level in dBFS (0 dBFS is full scale; a full-scale sine is -3 dBFS, normal speech roughly -30 to -15, room noise -60 to -45, digital silence is reported as -120). A frame is silent when its level is below threshold_db; a run of silent frames lasting at least min_silence_ms is reported as a silence, including at the very start or end of the file, and the stretches between silences are reported as sounds (anything louder than the threshold: speech, music or noise; this is not speech recognition). Times are integer milliseconds from the start of the audio, accurate to about one frame. The result also gives the loudest and quietest frame levels, which help choose a threshold when the first try finds too little or too much silence. For MP3 the encoder delay is trimmed when the file records it (LAME/Xing header); otherwise times come out late by the codec delay, about 1100 samples (25 ms at 44.1 kHz, 50 ms at 22.05 kHz). Long files are refused with a clear error: at most 120 million samples over all channels, i.e. about 22 minutes of 44.1 kHz stereo, 45 minutes of 44.1 kHz mono or 2 hours of 16 kHz mono (and never more than 4 hours); cut longer recordings into parts first.
#[tool(id = "audio.detect-silence")]
pub fn audio_detect_silence(args: Args) -> Result<Output, ToolError> {
    detect(&args, &abi::tool_root())
}

/// Runs `audio.detect-silence`. It writes no files; `_out` keeps the signature of the
/// file-taking tools.
///
/// # Errors
/// Bad arguments (out-of-range numbers, a missing file, an unsupported or unrecognised
/// format, audio longer than 4 hours) or a file that cannot be decoded.
pub fn run(input: Value, root: &Path, _out: &OutDir) -> Result<Value, ToolError> {
    abi::to_output(&detect(&abi::parse_args(input)?, root)?)
}

fn detect(args: &Args, root: &Path) -> Result<Output, ToolError> {
    let settings = Settings::from_args(args)?;
    let (source, display) = open_source(&args.source, root)?;
    analyse(source, &display, &settings)
}

/// The validated analysis settings.
#[derive(Debug, Clone, Copy)]
struct Settings {
    threshold_db: f64,
    min_silence_ms: u64,
    frame_ms: u64,
    channel: ChannelMode,
}

impl Settings {
    fn from_args(args: &Args) -> Result<Settings, ToolError> {
        if !(args.threshold_db.is_finite() && (-120.0..=0.0).contains(&args.threshold_db)) {
            return Err(ToolError::bad_args(format!(
                "threshold_db must be between -120 and 0 dBFS, got {}; -40 suits speech recordings, -50 to -60 a quiet studio, -30 a noisy room",
                args.threshold_db
            )));
        }
        if args.min_silence_ms > MAX_DURATION_MS {
            return Err(ToolError::bad_args(format!(
                "min_silence_ms must be at most {MAX_DURATION_MS} (4 hours), got {}; 300-1000 finds pauses between sentences",
                args.min_silence_ms
            )));
        }
        if !(1..=1000).contains(&args.frame_ms) {
            return Err(ToolError::bad_args(format!(
                "frame_ms must be between 1 and 1000, got {}; the default 10 is right for most uses",
                args.frame_ms
            )));
        }
        Ok(Settings {
            threshold_db: args.threshold_db,
            min_silence_ms: args.min_silence_ms,
            frame_ms: args.frame_ms,
            channel: ChannelMode::parse(args.channel.as_ref())?,
        })
    }
}

/// Opens the source for streaming: a file is read as it is decoded, base64 is decoded once.
fn open_source(blob: &Blob, root: &Path) -> Result<(Box<dyn MediaSource>, String), ToolError> {
    if blob.base64.is_none()
        && let Some((file, display)) = blob.open(root)?
    {
        return Ok((Box::new(file), format!("source \"{display}\"")));
    }
    let bytes = blob.read(root, MAX_BASE64_BYTES)?;
    Ok((Box::new(Cursor::new(bytes)), "source".to_owned()))
}

/// What the first bytes of a file say it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniffed {
    /// A format this tool decodes: "wav", "flac", "ogg" or "mp3".
    Supported(&'static str),
    /// A recognised format this tool does not decode, described for the caller.
    Unsupported(&'static str),
    /// Nothing recognisable.
    Unknown,
}

/// Recognises the container from its first bytes.
pub(crate) fn sniff(head: &[u8]) -> Sniffed {
    let at = |offset: usize, magic: &[u8]| head.get(offset..offset + magic.len()) == Some(magic);
    if at(0, b"RIFF") && at(8, b"WAVE") {
        Sniffed::Supported("wav")
    } else if at(0, b"RF64") || at(0, b"BW64") {
        Sniffed::Unsupported("an RF64/BW64 (64-bit WAV) file")
    } else if at(0, b"fLaC") {
        Sniffed::Supported("flac")
    } else if at(0, b"OggS") {
        // The first page's payload names the codec of the first stream.
        let segments = head.get(26).copied().unwrap_or(0) as usize;
        let payload = 27 + segments;
        if at(payload, b"\x01vorbis") {
            Sniffed::Supported("ogg")
        } else if at(payload, b"OpusHead") {
            Sniffed::Unsupported("an Ogg file with Opus audio")
        } else if at(payload, b"\x7fFLAC") {
            Sniffed::Unsupported("an Ogg file with FLAC audio")
        } else if at(payload, b"Speex") {
            Sniffed::Unsupported("an Ogg file with Speex audio")
        } else {
            Sniffed::Unsupported("an Ogg file with audio in an unknown codec")
        }
    } else if at(0, b"ID3") {
        Sniffed::Supported("mp3")
    } else if head.len() >= 2 && head[0] == 0xFF && head[1] & 0xE0 == 0xE0 {
        // An MPEG audio frame sync; bits 1-2 of the second byte are the layer.
        match (head[1] >> 1) & 0b11 {
            0b01 => Sniffed::Supported("mp3"),
            0b00 => Sniffed::Unsupported("an AAC (ADTS) stream"),
            _ => Sniffed::Unsupported("an MPEG layer I/II audio stream (MP1/MP2)"),
        }
    } else if at(0, b"FORM") && (at(8, b"AIFF") || at(8, b"AIFC")) {
        Sniffed::Unsupported("an AIFF file")
    } else if at(4, b"ftyp") {
        Sniffed::Unsupported("an MP4/M4A/MOV file (AAC or ALAC audio)")
    } else if at(0, b"\x1A\x45\xDF\xA3") {
        Sniffed::Unsupported("a Matroska/WebM file")
    } else if at(0, b"#!AMR") {
        Sniffed::Unsupported("an AMR file")
    } else if at(0, b"MThd") {
        Sniffed::Unsupported("a MIDI file (notes, not recorded audio)")
    } else if at(0, b".snd") {
        Sniffed::Unsupported("a Sun/NeXT .au file")
    } else if at(0, b"caff") {
        Sniffed::Unsupported("a Core Audio (CAF) file")
    } else if at(0, b"RIFF") {
        Sniffed::Unsupported("a RIFF file that is not WAV (e.g. AVI or WebP)")
    } else if at(0, b"%PDF") {
        Sniffed::Unsupported("a PDF document")
    } else if at(0, b"PK\x03\x04") {
        Sniffed::Unsupported("a ZIP archive (or an Office document)")
    } else if at(0, b"\x89PNG") || at(0, b"\xFF\xD8\xFF") || at(0, b"GIF8") {
        Sniffed::Unsupported("an image")
    } else {
        Sniffed::Unknown
    }
}

const SUPPORTED: &str = "WAV (PCM or float), FLAC, Ogg Vorbis and MP3";

fn read_head(source: &mut dyn MediaSource) -> Result<Vec<u8>, std::io::Error> {
    let mut head = Vec::with_capacity(64);
    source.take(64).read_to_end(&mut head)?;
    source.seek(SeekFrom::Start(0))?;
    Ok(head)
}

/// `sum` plus the square of each sample, in order. Its own function, not inlined into the
/// decoding loop, and eight samples a turn, so that the loop's own work (its interrupt check
/// among it) is paid once per eight samples; the additions stay one after another, in order,
/// so the sum is the same to the bit. (Before the vendored code generator called the
/// interrupt check's builtins without clobbering registers, `perf annotate` showed Cranelift
/// storing the running sum to the stack and loading it back at every turn.)
#[inline(never)]
fn square_sum<S: Copy + IntoSample<f32>>(sum: f64, samples: &[S]) -> f64 {
    let square = |s: S| {
        let s = f64::from(s.into_sample());
        s * s
    };
    let mut eights = samples.chunks_exact(8);
    let mut sum = sum;
    for eight in &mut eights {
        sum = eight.iter().fold(sum, |sum, &s| sum + square(s));
    }
    eights
        .remainder()
        .iter()
        .fold(sum, |sum, &s| sum + square(s))
}

/// A sample type whose squares [`Analyser::push`] sums: [`square_sum`] for every type, and for
/// 16-bit samples (most WAV files) the same sum computed exactly in integers.
trait Squares: Copy + IntoSample<f32> {
    fn square_sum(sum: f64, samples: &[Self]) -> f64 {
        square_sum(sum, samples)
    }
}

impl Squares for u8 {}
impl Squares for u16 {}
impl Squares for symphonia::core::sample::u24 {}
impl Squares for u32 {}
impl Squares for i8 {}
impl Squares for symphonia::core::sample::i24 {}
impl Squares for i32 {}
impl Squares for f32 {}
impl Squares for f64 {}

/// 2³⁰: a 16-bit sample `s` is `s × 2⁻¹⁵` as `f32` (symphonia's `s as f32 / 32768.0`, exact),
/// so its square is `s² × 2⁻³⁰`, exact in `f64`.
const TWO_POW_30: f64 = (1u64 << 30) as f64;

impl Squares for i16 {
    /// [`square_sum`] to the bit, in a loop that vectorises. Each square is a multiple of 2⁻³⁰
    /// of at most 1, so when `sum` is such a multiple too and `sum` plus one per sample stays
    /// below 2²³, every partial sum of the generic loop is a multiple of 2⁻³⁰ below 2²³ (53
    /// bits), exact, and the result is the exact sum whatever the order of the additions.
    /// Here the squares `s²` are summed as integers and added to `sum` once; any other `sum`
    /// (a frame's starts at 0, so only a frame of 2²³ samples or more) takes the generic loop.
    /// The generic loop, bound by the latency of one `f64` addition after another, was most
    /// of a WAV file's time natively and in the sandbox.
    fn square_sum(sum: f64, samples: &[i16]) -> f64 {
        const EXACT_BELOW: f64 = (1u64 << 23) as f64;
        let exact = (sum * TWO_POW_30).fract() == 0.0 && sum + (samples.len() as f64) < EXACT_BELOW;
        if samples.is_empty() || !exact {
            return square_sum(sum, samples);
        }
        let (eights, rest) = samples.as_chunks::<8>();
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        #[allow(unsafe_code, reason = "calls a function that needs SSE2")]
        // SAFETY: SSE2, which `squares_of_eights` needs, is enabled where this is compiled.
        let eights = unsafe { squares_of_eights(eights) };
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        let eights = squares_of_eights(eights);
        let squares = rest
            .iter()
            .fold(eights, |total, &s| total + u64::from(square(s)));
        sum + squares as f64 / TWO_POW_30
    }
}

/// `s²`, exact: at most 2³⁰.
fn square(s: i16) -> u32 {
    i32::from(s).unsigned_abs().pow(2)
}

/// The sum of the squares of `eights`, exact. Two squares fit a `u32` (2³¹ at most), so each
/// turn sums adjacent pairs of squares first, as one instruction where the target has it
/// (`i32x4.dot_i16x8_s` in the sandbox, SSE2's `pmaddwd` natively, the same four sums: their
/// 32-bit results wrap only for a pair of −2¹⁵, to 2³¹'s bits, which read as unsigned are
/// right), then adds the four pair sums to 64-bit totals, four vectors a turn (in the
/// sandbox each turn pays a fuel and an interrupt check). Written portably, LLVM made of it
/// shuffles and 16-bit multiplications of both halves for the sandbox (and AVX-512 natively);
/// the explicit form is the same arithmetic on both sides of the media benchmark.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
fn squares_of_eights(eights: &[[i16; 8]]) -> u64 {
    use std::arch::wasm32::{
        i16x8, i32x4_dot_i16x8, i64x2_add, u64x2_extend_high_u32x4, u64x2_extend_low_u32x4,
        u64x2_extract_lane, u64x2_splat,
    };
    let (mut low, mut high) = (u64x2_splat(0), u64x2_splat(0));
    let mut add = |&[a, b, c, d, e, f, g, h]: &[i16; 8]| {
        let samples = i16x8(a, b, c, d, e, f, g, h);
        let pairs = i32x4_dot_i16x8(samples, samples);
        low = i64x2_add(low, u64x2_extend_low_u32x4(pairs));
        high = i64x2_add(high, u64x2_extend_high_u32x4(pairs));
    };
    let (fours, rest) = eights.as_chunks::<4>();
    for four in fours {
        four.iter().for_each(&mut add);
    }
    rest.iter().for_each(add);
    let total = i64x2_add(low, high);
    u64x2_extract_lane::<0>(total) + u64x2_extract_lane::<1>(total)
}

/// See the `wasm32` version: the same sums with SSE2 (part of every `x86_64` target).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
fn squares_of_eights(eights: &[[i16; 8]]) -> u64 {
    use std::arch::x86_64::{
        _mm_add_epi64, _mm_cvtsi128_si64, _mm_madd_epi16, _mm_set_epi16, _mm_setzero_si128,
        _mm_unpackhi_epi32, _mm_unpackhi_epi64, _mm_unpacklo_epi32,
    };
    let zero = _mm_setzero_si128();
    let (mut low, mut high) = (zero, zero);
    let mut add = |&[a, b, c, d, e, f, g, h]: &[i16; 8]| {
        let samples = _mm_set_epi16(h, g, f, e, d, c, b, a);
        let pairs = _mm_madd_epi16(samples, samples);
        low = _mm_add_epi64(low, _mm_unpacklo_epi32(pairs, zero));
        high = _mm_add_epi64(high, _mm_unpackhi_epi32(pairs, zero));
    };
    let (fours, rest) = eights.as_chunks::<4>();
    for four in fours {
        four.iter().for_each(&mut add);
    }
    rest.iter().for_each(add);
    let total = _mm_add_epi64(low, high);
    let lane = |v| _mm_cvtsi128_si64(v).cast_unsigned();
    lane(total) + lane(_mm_unpackhi_epi64(total, total))
}

/// Elsewhere, the same pair sums in scalar code.
#[cfg(not(any(
    all(target_arch = "wasm32", target_feature = "simd128"),
    all(target_arch = "x86_64", target_feature = "sse2")
)))]
fn squares_of_eights(eights: &[[i16; 8]]) -> u64 {
    let pair = |a: i16, b: i16| u64::from(square(a) + square(b));
    eights
        .iter()
        .map(|&[a, b, c, d, e, f, g, h]| pair(a, b) + pair(c, d) + pair(e, f) + pair(g, h))
        .sum()
}

/// `sum` plus the square of each sample frame's mean over the channels, for the frames in
/// `stretch`.
#[inline(never)]
fn mix_square_sum<S: Copy + IntoSample<f32>>(
    sum: f64,
    planes: &[&[S]],
    stretch: &std::ops::Range<usize>,
) -> f64 {
    let channels = planes.len() as f64;
    stretch.clone().fold(sum, |sum, frame| {
        let mixed = planes
            .iter()
            .map(|plane| f64::from(plane[frame].into_sample()))
            .sum::<f64>()
            / channels;
        sum + mixed * mixed
    })
}

/// Decodes `source` packet by packet and finds its silences.
fn analyse(
    mut source: Box<dyn MediaSource>,
    display: &str,
    settings: &Settings,
) -> Result<Output, ToolError> {
    let head = read_head(source.as_mut())
        .map_err(|e| ToolError::failed(format!("cannot read {display}: {e}")))?;
    let format = match sniff(&head) {
        Sniffed::Supported(name) => name,
        Sniffed::Unsupported(what) => {
            return Err(ToolError::bad_args(format!(
                "{display} is {what}, which this tool does not decode; it reads {SUPPORTED}: convert the file first"
            )));
        }
        Sniffed::Unknown if head.is_empty() => {
            return Err(ToolError::bad_args(format!(
                "{display} is empty; pass an audio file ({SUPPORTED})"
            )));
        }
        Sniffed::Unknown => {
            return Err(ToolError::bad_args(format!(
                "{display} is not a recognised audio file (its first bytes match no known format); this tool reads {SUPPORTED}"
            )));
        }
    };
    let corrupt = |e: &SymError| {
        ToolError::bad_args(format!(
            "{display} looks like {format} but cannot be read: {}; the file may be truncated or corrupt",
            abi::one_line(&e.to_string())
        ))
    };

    let stream = MediaSourceStream::new(source, Default::default());
    let format_opts = FormatOptions {
        enable_gapless: true,
        ..Default::default()
    };
    let probed = symphonia::default::get_probe()
        .format(
            &Hint::new(),
            stream,
            &format_opts,
            &MetadataOptions::default(),
        )
        .map_err(|e| corrupt(&e))?;
    let mut reader = probed.format;
    let track = reader
        .tracks()
        .iter()
        .find(|t| t.codec_params.codec != CODEC_TYPE_NULL)
        .ok_or_else(|| {
            ToolError::bad_args(format!("{display} ({format}) contains no audio track"))
        })?;
    let track_id = track.id;
    let params = track.codec_params.clone();
    let codecs = symphonia::default::get_codecs();
    let codec = codecs
        .get_codec(params.codec)
        .map_or_else(|| "unknown".to_owned(), |d| d.short_name.to_owned());
    let mut decoder = codecs
        .make(&params, &DecoderOptions::default())
        .map_err(|e| {
            ToolError::bad_args(format!(
                "{display} is {format}, but its audio codec is not supported ({}); this tool reads {SUPPORTED}",
                abi::one_line(&e.to_string())
            ))
        })?;
    if let (Some(frames), Some(rate), Some(channels)) =
        (params.n_frames, params.sample_rate, params.channels)
        && rate > 0
        && (frames / u64::from(rate) > MAX_DURATION_MS / 1000
            || frames.saturating_mul(channels.count() as u64) > MAX_SAMPLES)
    {
        return Err(too_long(
            display,
            frames.saturating_mul(1000) / u64::from(rate),
            rate,
            channels.count(),
        ));
    }

    let mut analyser: Option<Analyser> = None;
    let mut warnings = Vec::new();
    let mut decode_errors = 0u64;
    let mut first_error = None;
    loop {
        let packet = match reader.next_packet() {
            Ok(packet) => packet,
            Err(SymError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(SymError::ResetRequired) => {
                warnings.push(format!(
                    "the stream changes its parameters after {} ms (e.g. a chained Ogg file); only the audio before that was analysed",
                    analyser.as_ref().map_or(0, Analyser::position_ms)
                ));
                break;
            }
            Err(SymError::IoError(e)) => {
                return Err(ToolError::failed(format!("cannot read {display}: {e}")));
            }
            Err(e) => {
                // A damaged container: keep what was decoded so far if there is any.
                if analyser.as_ref().is_some_and(|a| a.samples > 0) {
                    warnings.push(format!(
                        "the file is damaged after {} ms ({}); only the audio before that was analysed",
                        analyser.as_ref().map_or(0, Analyser::position_ms),
                        abi::one_line(&e.to_string())
                    ));
                    break;
                }
                return Err(corrupt(&e));
            }
        };
        if packet.track_id() != track_id {
            continue;
        }
        let decoded = match decoder.decode(&packet) {
            Ok(decoded) => decoded,
            Err(SymError::DecodeError(msg)) => {
                decode_errors += 1;
                first_error.get_or_insert(msg);
                if decode_errors > MAX_DECODE_ERRORS {
                    return Err(ToolError::bad_args(format!(
                        "{display} looks like {format} but more than {MAX_DECODE_ERRORS} of its packets cannot be decoded (first: {msg}); the file is corrupt"
                    )));
                }
                continue;
            }
            Err(SymError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(corrupt(&e)),
        };
        let spec = *decoded.spec();
        let frames = decoded.frames();
        if frames == 0 {
            continue;
        }
        let analyser = match &mut analyser {
            Some(a) => {
                if a.sample_rate != spec.rate || a.channels != spec.channels.count() {
                    warnings.push(format!(
                        "the stream changes from {} Hz, {} channel(s) to {} Hz, {} channel(s) after {} ms; only the audio before that was analysed",
                        a.sample_rate,
                        a.channels,
                        spec.rate,
                        spec.channels.count(),
                        a.position_ms()
                    ));
                    break;
                }
                a
            }
            None => analyser.insert(Analyser::new(
                spec.rate,
                spec.channels.count(),
                settings,
                display,
            )?),
        };
        match decoded {
            AudioBufferRef::U8(buf) => analyser.push(buf.planes().planes()),
            AudioBufferRef::U16(buf) => analyser.push(buf.planes().planes()),
            AudioBufferRef::U24(buf) => analyser.push(buf.planes().planes()),
            AudioBufferRef::U32(buf) => analyser.push(buf.planes().planes()),
            AudioBufferRef::S8(buf) => analyser.push(buf.planes().planes()),
            AudioBufferRef::S16(buf) => analyser.push(buf.planes().planes()),
            AudioBufferRef::S24(buf) => analyser.push(buf.planes().planes()),
            AudioBufferRef::S32(buf) => analyser.push(buf.planes().planes()),
            AudioBufferRef::F32(buf) => analyser.push(buf.planes().planes()),
            AudioBufferRef::F64(buf) => analyser.push(buf.planes().planes()),
        }
        analyser.check_finite(display)?;
        if analyser.samples > analyser.max_samples {
            return Err(too_long(
                display,
                analyser.position_ms(),
                analyser.sample_rate,
                analyser.channels,
            ));
        }
    }

    let Some(mut analyser) = analyser else {
        return Err(match first_error {
            Some(msg) => ToolError::bad_args(format!(
                "{display} looks like {format} but none of its audio can be decoded ({msg}); the file is corrupt"
            )),
            None => ToolError::bad_args(format!("{display} ({format}) contains no audio samples")),
        });
    };
    if let Some(declared) = params.n_frames
        && params.sample_rate == Some(analyser.sample_rate)
        && analyser.samples + analyser.frame_len < declared
    {
        warnings.push(format!(
            "the file declares {} ms of audio but only {} ms could be read; it is probably truncated",
            analyser.to_ms(declared),
            analyser.position_ms()
        ));
    }
    if decode_errors > 0 {
        warnings.push(format!(
            "{decode_errors} packet(s) could not be decoded and were skipped (first: {}); the file may be damaged, and times after the first bad packet may be early",
            first_error.unwrap_or("unknown error")
        ));
    }
    analyser.end(display)?;
    Ok(analyser.finish(format, codec, settings, warnings))
}

fn too_long(display: &str, ms: u64, rate: u32, channels: usize) -> ToolError {
    let max_ms = max_samples(rate, channels) * 1000 / u64::from(rate.max(1));
    ToolError::bad_args(format!(
        "{display} is too long: at least {} min of {rate} Hz audio in {channels} channel(s), and this tool analyses at most {} min at that rate (at most {MAX_SAMPLES} samples over all channels, and 4 hours); cut it into shorter parts, or convert it to mono or a lower sample rate, first",
        ms / 60_000,
        max_ms / 60_000
    ))
}

/// The most sample frames analysed at `rate` with `channels` channels.
fn max_samples(rate: u32, channels: usize) -> u64 {
    (MAX_SAMPLES / channels.max(1) as u64).min(u64::from(rate) * (MAX_DURATION_MS / 1000))
}

/// Turns a stream of interleaved samples into frames and frames into regions.
#[derive(Debug)]
struct Analyser {
    sample_rate: u32,
    channels: usize,
    mode: ChannelMode,
    /// Samples (per channel) in one analysis frame.
    frame_len: u64,
    /// A frame is silent when its mean square is below this.
    threshold_ms: f64,
    min_silence_samples: u64,
    max_samples: u64,
    /// Samples (per channel) consumed so far.
    samples: u64,
    /// The current frame: per-channel (or mixed) sums of squares and its length so far.
    sums: Vec<f64>,
    in_frame: u64,
    total_sum: f64,
    loudest: f64,
    quietest: f64,
    silence_start: Option<u64>,
    silences: Vec<(u64, u64)>,
    truncated: bool,
    /// The first sample of the first frame whose analysed samples were not all finite numbers
    /// (a float file's NaN or infinite samples): its sums are NaN or infinite.
    not_finite: Option<u64>,
}

impl Analyser {
    fn new(
        sample_rate: u32,
        channels: usize,
        settings: &Settings,
        display: &str,
    ) -> Result<Analyser, ToolError> {
        if sample_rate == 0 || channels == 0 {
            return Err(ToolError::bad_args(format!(
                "{display} declares {sample_rate} Hz and {channels} channel(s), which is not playable audio; the file is corrupt"
            )));
        }
        if let ChannelMode::Index(i) = settings.channel
            && i >= channels
        {
            return Err(ToolError::bad_args(format!(
                "channel {i} does not exist: {display} has {channels} channel(s), numbered from 0; use \"mix\" or \"loudest\" to use them all"
            )));
        }
        let rate = u64::from(sample_rate);
        let sums = match settings.channel {
            ChannelMode::Loudest => channels,
            ChannelMode::Mix | ChannelMode::Index(_) => 1,
        };
        Ok(Analyser {
            sample_rate,
            channels,
            mode: settings.channel,
            frame_len: (rate * settings.frame_ms).div_ceil(1000).max(1),
            threshold_ms: 10f64.powf(settings.threshold_db / 10.0),
            min_silence_samples: (rate * settings.min_silence_ms).div_ceil(1000),
            max_samples: max_samples(sample_rate, channels),
            samples: 0,
            sums: vec![0.0; sums],
            in_frame: 0,
            total_sum: 0.0,
            loudest: 0.0,
            quietest: f64::INFINITY,
            silence_start: None,
            silences: Vec::new(),
            truncated: false,
            not_finite: None,
        })
    }

    fn position_ms(&self) -> u64 {
        self.to_ms(self.samples)
    }

    fn to_ms(&self, samples: u64) -> u64 {
        let rate = u64::from(self.sample_rate);
        (samples * 1000 + rate / 2) / rate
    }

    /// Consumes a packet's samples as the decoder gives them, one slice per channel (all of the
    /// same length), each sample made `f32` by symphonia's own conversion, as a
    /// `SampleBuffer<f32>` would (so no interleaved copy is made first): up to the end of the
    /// current analysis frame at a time, each sum kept in a local across that stretch and
    /// added in sample order (16-bit samples in integers, to the same bits: [`Squares`]).
    fn push<S: Squares>(&mut self, planes: &[&[S]]) {
        let frames = planes.first().map_or(0, |plane| plane.len());
        debug_assert_eq!(planes.len(), self.channels);
        let mut at = 0;
        while at < frames {
            let room = usize::try_from(self.frame_len - self.in_frame).unwrap_or(usize::MAX);
            let stretch = at..at + room.min(frames - at);
            match self.mode {
                // One channel mixed is the channel itself: `-0.0 + s` is `s` and `s / 1.0` is
                // `s`, to the bit.
                ChannelMode::Mix if planes.len() == 1 => {
                    self.sums[0] = S::square_sum(self.sums[0], &planes[0][stretch.clone()]);
                }
                ChannelMode::Mix => self.sums[0] = mix_square_sum(self.sums[0], planes, &stretch),
                ChannelMode::Index(i) => {
                    self.sums[0] = S::square_sum(self.sums[0], &planes[i][stretch.clone()]);
                }
                ChannelMode::Loudest => {
                    for (sum, plane) in self.sums.iter_mut().zip(planes) {
                        *sum = S::square_sum(*sum, &plane[stretch.clone()]);
                    }
                }
            }
            let taken = stretch.len() as u64;
            self.in_frame += taken;
            self.samples += taken;
            if self.in_frame == self.frame_len {
                self.end_frame();
            }
            at = stretch.end;
        }
    }

    /// Closes the current frame: measures it and advances the region state.
    fn end_frame(&mut self) {
        let len = self.in_frame as f64;
        let start = self.samples - self.in_frame;
        if self.not_finite.is_none() && !self.sums.iter().all(|s| s.is_finite()) {
            self.not_finite = Some(start);
        }
        // `f64::max` and `min` ignore a NaN argument, which WebAssembly's `f64.max` and `min`
        // do not, so in the guest each was a call to libm (three a frame, ~3% of a WAV file's
        // time); the comparisons below give the same results, since only the second argument
        // can be NaN (a float sample's square): the running values start as numbers and only
        // ever take a number.
        let mean_square = self
            .sums
            .iter()
            .fold(0.0f64, |m, &s| if s / len > m { s / len } else { m });
        self.total_sum += self.sums.iter().sum::<f64>() / self.sums.len() as f64;
        if mean_square > self.loudest {
            self.loudest = mean_square;
        }
        if mean_square < self.quietest {
            self.quietest = mean_square;
        }
        if mean_square < self.threshold_ms {
            self.silence_start.get_or_insert(start);
        } else if let Some(silence) = self.silence_start.take() {
            self.add_silence(silence, start);
        }
        self.sums.iter_mut().for_each(|s| *s = 0.0);
        self.in_frame = 0;
    }

    fn add_silence(&mut self, start: u64, end: u64) {
        if end - start < self.min_silence_samples.max(1) {
            return;
        }
        if self.silences.len() == MAX_REGIONS {
            self.truncated = true;
        } else if !self.truncated {
            self.silences.push((start, end));
        }
    }

    /// Closes the last frame, if the audio ended inside one, and refuses audio that had
    /// samples which are not finite numbers: no level can be read from a NaN or infinite sum,
    /// and a file of such samples is damaged (the PCM formats that hold floats allow them).
    fn end(&mut self, display: &str) -> Result<(), ToolError> {
        if self.in_frame > 0 {
            self.end_frame();
        }
        self.check_finite(display)
    }

    /// [`Analyser::end`]'s refusal, also checked after each packet, so that a damaged file
    /// stops at its first bad frame.
    fn check_finite(&self, display: &str) -> Result<(), ToolError> {
        match self.not_finite {
            None => Ok(()),
            Some(start) => Err(ToolError::bad_args(format!(
                "{display} has samples that are not finite numbers (NaN or infinite, or too large to square), first in the analysis frame at {} ms; the file is damaged, and its levels cannot be measured",
                self.to_ms(start)
            ))),
        }
    }

    /// The analysis, once [`Analyser::end`] has closed the last frame.
    fn finish(
        mut self,
        format: &'static str,
        codec: String,
        settings: &Settings,
        mut warnings: Vec<String>,
    ) -> Output {
        if let Some(silence) = self.silence_start.take() {
            self.add_silence(silence, self.samples);
        }
        let region = |a: &Analyser, (start, end): (u64, u64)| {
            let (start_ms, end_ms) = (a.to_ms(start), a.to_ms(end));
            Region {
                start_ms,
                end_ms,
                duration_ms: end_ms - start_ms,
            }
        };
        let silences: Vec<Region> = self.silences.iter().map(|&r| region(&self, r)).collect();
        // The sounds are the gaps between silences; when the list is truncated, only up to the
        // last silence listed.
        let mut sounds = Vec::new();
        let mut cursor = 0;
        for &(start, end) in &self.silences {
            if start > cursor {
                sounds.push(region(&self, (cursor, start)));
            }
            cursor = end;
        }
        if !self.truncated && cursor < self.samples {
            sounds.push(region(&self, (cursor, self.samples)));
        }
        if self.truncated {
            warnings.push(format!(
                "more than {MAX_REGIONS} silences: only the first {MAX_REGIONS} (and the sounds before the last of them) are listed; raise min_silence_ms or lower threshold_db"
            ));
        }
        Output {
            format,
            codec,
            sample_rate: self.sample_rate,
            channels: self.channels,
            duration_ms: self.position_ms(),
            frame_ms: settings.frame_ms,
            threshold_db: settings.threshold_db,
            min_silence_ms: settings.min_silence_ms,
            channel: match self.mode {
                ChannelMode::Mix => "mix".to_owned(),
                ChannelMode::Loudest => "loudest".to_owned(),
                ChannelMode::Index(i) => i.to_string(),
            },
            loudest_frame_db: to_db(self.loudest),
            quietest_frame_db: to_db(self.quietest),
            overall_rms_db: to_db(self.total_sum / self.samples.max(1) as f64),
            silent_ms: silences.iter().map(|r| r.duration_ms).sum(),
            silences,
            sounds,
            truncated: self.truncated,
            warnings,
        }
    }
}

/// A mean square as dBFS, rounded to 0.1 dB and floored at [`FLOOR_DB`].
fn to_db(mean_square: f64) -> f64 {
    if mean_square.is_nan() || mean_square <= 0.0 {
        return FLOOR_DB;
    }
    ((100.0 * mean_square.log10()).round() / 10.0).max(FLOOR_DB)
}
