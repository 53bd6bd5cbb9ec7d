//! `web.fetch`: fetches a URL with `GET` through the host (see [`crate::host`]): only hosts in
//! both the tool's and the app's allow-lists, every redirect checked again, the body cut at a
//! size limit.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use locara_pdk::{JsonSchema, tool};

use crate::abi::ToolError;
use crate::host::{self, Fetched};

/// How much of a body is read when the caller does not say.
const DEFAULT_MAX_BYTES: u64 = 1 << 20;

/// `web.fetch`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The absolute http URL to fetch.
    #[schemars(length(min = 1, max = 8192))]
    url: String,
    /// The most bytes of the body to return; a longer body is cut. Default 1 MiB.
    #[serde(default = "default_max_bytes")]
    #[schemars(range(min = 1, max = 4_194_304))]
    max_bytes: u64,
}

fn default_max_bytes() -> u64 {
    DEFAULT_MAX_BYTES
}

/// `web.fetch`'s result.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// The HTTP status of the last response.
    #[schemars(range(min = 100, max = 999))]
    status: u16,
    /// The URL of the last response, after any redirects.
    url: String,
    /// The URLs redirected to, in order.
    redirects: Vec<String>,
    /// The Content-Type header, if any.
    content_type: Option<String>,
    /// The number of body bytes returned.
    bytes: usize,
    /// Whether the body was longer than max_bytes and was cut.
    truncated: bool,
    /// The body, when it is UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    text: Option<String>,
    /// The body in base64, when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    base64: Option<String>,
}

/// Fetches a URL with HTTP GET and returns the status, the final URL after redirects, the
/// content type and the body: as text when it is UTF-8, else as base64. Only hosts the app
/// allows can be reached, and every redirect is checked against the same list: a refused URL
/// is an error naming the allowed hosts. The body is cut at max_bytes (truncated: true). http
/// and https; a host name resolving to a private or loopback address is refused unless the app
/// grants that address. No file access.
#[tool(id = "web.fetch")]
pub fn web_fetch(args: Args) -> Result<Output, ToolError> {
    Ok(output(host::fetch(&args.url, Some(args.max_bytes))?))
}

/// Runs `web.fetch` on a JSON input.
///
/// # Errors
/// A refused URL ([`crate::abi::ErrorKind::BadArgs`]), or a fetch that failed.
pub fn run(input: Value) -> Result<Value, ToolError> {
    __locara_tool_call(input)
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
