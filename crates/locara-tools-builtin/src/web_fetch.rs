//! `web.fetch`: fetches a URL with `GET` through the host (see [`crate::host`]): only hosts in
//! both the tool's and the app's allow-lists, every redirect checked again, the body cut at a
//! size limit.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::abi::{self, ToolError};
use crate::host::{self, Fetched};

/// How much of a body is read when the caller does not say.
const DEFAULT_MAX_BYTES: u64 = 1 << 20;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    url: String,
    #[serde(default)]
    max_bytes: Option<u64>,
}

#[derive(Debug, Serialize)]
struct Output {
    status: u16,
    url: String,
    redirects: Vec<String>,
    content_type: Option<String>,
    bytes: usize,
    truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    base64: Option<String>,
}

/// Runs `web.fetch`.
///
/// # Errors
/// A refused URL ([`abi::ErrorKind::BadArgs`]), or a fetch that failed.
pub fn run(input: Value) -> Result<Value, ToolError> {
    let args: Args = abi::parse_args(input)?;
    let fetched = host::fetch(&args.url, Some(args.max_bytes.unwrap_or(DEFAULT_MAX_BYTES)))?;
    abi::to_output(&output(fetched))
}

/// The body as text when it is UTF-8 (a cut body may end inside a character, which is
/// dropped), else as base64.
fn output(mut fetched: Fetched) -> Output {
    let body = std::mem::take(&mut fetched.body);
    let bytes = body.len();
    let text = match String::from_utf8(body) {
        Ok(text) => Ok(text),
        Err(e) if fetched.truncated && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut body = e.into_bytes();
            body.truncate(valid);
            String::from_utf8(body).map_err(|e| e.into_bytes())
        }
        Err(e) => Err(e.into_bytes()),
    };
    let (text, base64) = match text {
        Ok(text) => (Some(text), None),
        Err(body) => (
            None,
            Some(base64::engine::general_purpose::STANDARD.encode(body)),
        ),
    };
    Output {
        status: fetched.status,
        url: fetched.url,
        redirects: fetched.redirects,
        content_type: fetched.content_type,
        bytes,
        truncated: fetched.truncated,
        text,
        base64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fetched(truncated: bool, body: Vec<u8>) -> Fetched {
        Fetched {
            status: 200,
            url: "http://example.test/".to_owned(),
            redirects: Vec::new(),
            content_type: None,
            truncated,
            body,
        }
    }

    #[test]
    fn utf8_is_text_and_binary_is_base64() {
        let text = output(fetched(false, "héllo".as_bytes().to_vec()));
        assert_eq!(
            (text.text.as_deref(), text.base64, text.bytes),
            (Some("héllo"), None, 6)
        );
        let binary = output(fetched(false, vec![0xff, 0x00, 0x80]));
        assert_eq!(
            (binary.text, binary.base64.as_deref()),
            (None, Some("/wCA"))
        );
    }

    #[test]
    fn a_cut_body_ending_inside_a_character_is_still_text() {
        let mut body = "ab".as_bytes().to_vec();
        body.push("é".as_bytes()[0]);
        let cut = output(fetched(true, body.clone()));
        assert_eq!(cut.text.as_deref(), Some("ab"));
        // The same bytes from an uncut body are not UTF-8.
        assert!(output(fetched(false, body)).base64.is_some());
    }

    #[test]
    fn outside_the_sandbox_there_is_no_host() {
        let error = run(json!({"url": "http://example.test/"})).unwrap_err();
        assert!(
            error.message().contains("only inside the Locara sandbox"),
            "{error}"
        );
    }
}
