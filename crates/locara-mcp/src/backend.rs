//! The other direction: the tools of an external MCP server as Locara tools.
//!
//! [`McpBackend::connect_stdio`] starts a server process and speaks MCP to it over its stdio,
//! and [`McpBackend::connect_http`] reaches a running server over streamable HTTP, `http` or
//! `https` (TLS with `locara-egress`'s set-up: the system's roots plus the app's CAs,
//! [`McpBackend::connect_http_with`]);
//! [`McpBackend::host_tools`] turns each tool it lists into a [`HostTool`], so that it appears
//! in search, describe, run, batches and chains, behind the same pipeline as a wasm tool: its
//! arguments are checked against its input schema before the server sees them, its result
//! against its output schema, and its output is capped. Its safety tier comes from the MCP
//! annotations, read conservatively: `readOnlyHint` is read-only, `destructiveHint: false`
//! side-effecting, anything else (the spec's default is destructive) privileged, so it needs
//! approval.
//!
//! A tool `name` of server `server` is the Locara tool `<server>.<name>` (lowercased, any
//! character a tool id does not allow replaced by `-`). Its version is the server's version when
//! that is semver, else `0.0.0`.
//!
//! The output: a tool that declares an `outputSchema` returns its `structuredContent`, checked
//! against that schema; any other returns `{"text": <its text blocks joined>, "content": [<its
//! content blocks>]}`. A result with `isError` is a `tool_error` with the server's text.

use std::{borrow::Cow, sync::Arc};

use locara_facade::{HandlerError, HostTool, SafetyTier, ToolHandler, ToolManifest};
use locara_manifest::{ToolName, Version};
use rmcp::{
    RoleClient, ServiceExt as _,
    model::{CallToolRequestParams, CallToolResult, Tool},
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

use crate::Error;

/// Whether `name` can start tool ids.
fn check_name(name: &str) -> Result<(), Error> {
    ToolName::new(name)
        .map(drop)
        .map_err(|e| Error::InvalidBackend(format!("`{name}`: {e}")))
}

/// A connection to an external MCP server.
#[derive(Debug, Clone)]
pub struct McpBackend {
    name: String,
    connection: Arc<RunningService<RoleClient, ()>>,
}

impl McpBackend {
    /// Starts `command` and connects to it over its stdin and stdout; `name` prefixes its tool
    /// ids. The process is stopped when the last handle to the connection is dropped.
    ///
    /// # Errors
    /// [`Error::Protocol`] when the process cannot start or the MCP handshake fails, and
    /// [`Error::InvalidBackend`] for a name that cannot start a tool id.
    pub async fn connect_stdio(
        name: &str,
        command: tokio::process::Command,
    ) -> Result<McpBackend, Error> {
        check_name(name)?;
        let transport = TokioChildProcess::new(command)
            .map_err(|e| Error::Protocol(format!("cannot start the mcp server `{name}`: {e}")))?;
        McpBackend::handshake(name, ().serve(transport).await)
    }

    /// Connects to the MCP server at `url` (its streamable HTTP endpoint, e.g.
    /// `http://127.0.0.1:8000/mcp` or `https://tools.example/mcp`); `name` prefixes its tool
    /// ids. The session ends when the last handle to the connection is dropped. `https` trusts
    /// the system's roots; [`McpBackend::connect_http_with`] takes a connector trusting more.
    ///
    /// # Errors
    /// [`Error::InvalidBackend`] for a name that cannot start a tool id or a URL that is not
    /// `http` or `https`, and [`Error::Protocol`] when the server cannot be reached (a TLS
    /// failure says why) or the handshake fails.
    pub async fn connect_http(name: &str, url: &str) -> Result<McpBackend, Error> {
        McpBackend::connect_http_with(name, url, &locara_egress::Connector::new()).await
    }

    /// [`McpBackend::connect_http`] with the TLS set-up of `connector` (e.g. one that also
    /// trusts a private CA, `--ca-cert`). Proxies are taken from the environment, as the
    /// connector does.
    ///
    /// # Errors
    /// As [`McpBackend::connect_http`], and [`Error::InvalidBackend`] when the TLS set-up
    /// cannot be built (no trusted roots).
    pub async fn connect_http_with(
        name: &str,
        url: &str,
        connector: &locara_egress::Connector,
    ) -> Result<McpBackend, Error> {
        check_name(name)?;
        // reqwest, built without a crypto provider of its own, asks for the process's default
        // even for `http`: make ring (the one locara-egress uses) the default unless the app
        // already chose one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut client = reqwest::Client::builder();
        match url.split_once("://") {
            Some(("http", _)) => {}
            Some(("https", _)) => {
                let tls = connector
                    .tls_config()
                    .map_err(|e| Error::InvalidBackend(format!("`{url}`: {e}")))?;
                client = client.tls_backend_preconfigured(tls).https_only(true);
            }
            _ => {
                return Err(Error::InvalidBackend(format!(
                    "`{url}` is not an http or https URL"
                )));
            }
        }
        let client = client.build().map_err(|e| {
            Error::InvalidBackend(format!("`{url}`: the HTTP client cannot be built: {e}"))
        })?;
        let transport = StreamableHttpClientTransport::with_client(
            client,
            StreamableHttpClientTransportConfig::with_uri(url),
        );
        let handshake = McpBackend::handshake(name, ().serve(transport).await);
        // reqwest's error says only "error sending request"; when TLS is why, the connector,
        // making the same handshake, says what failed and what to do.
        if let (Err(Error::Protocol(message)), Ok(parsed)) = (&handshake, url::Url::parse(url))
            && parsed.scheme() == "https"
            && let Err(locara_egress::Error::Tls(why)) = connector
                .connect(&parsed, locara_egress::AddressPolicy::Any)
                .await
        {
            return Err(Error::Protocol(format!("{message}: {why}")));
        }
        handshake
    }

    fn handshake<E: std::fmt::Display>(
        name: &str,
        connection: Result<RunningService<RoleClient, ()>, E>,
    ) -> Result<McpBackend, Error> {
        let connection = connection.map_err(|e| {
            Error::Protocol(format!(
                "the mcp server `{name}` did not complete the handshake: {e}"
            ))
        })?;
        Ok(McpBackend {
            name: name.to_owned(),
            connection: Arc::new(connection),
        })
    }

    /// The server's tools, as in-process Locara tools that forward each call to it.
    ///
    /// # Errors
    /// [`Error::Protocol`] when listing fails, and [`Error::InvalidBackend`] when a tool's
    /// schemas cannot make a manifest.
    pub async fn host_tools(&self) -> Result<Vec<HostTool>, Error> {
        let tools = self.connection.list_all_tools().await.map_err(|e| {
            Error::Protocol(format!("cannot list the tools of `{}`: {e}", self.name))
        })?;
        let version = self.connection.peer_info().and_then(|info| {
            info.server_info
                .as_ref()
                .and_then(|server| server.version.parse::<Version>().ok())
        });
        let version = match version {
            Some(version) => version,
            None => "0.0.0"
                .parse()
                .map_err(|e| Error::InvalidBackend(format!("version 0.0.0: {e}")))?,
        };
        tools
            .into_iter()
            .map(|tool| {
                let manifest = manifest(&self.name, &version, &tool)?;
                let handler = Arc::new(Forward {
                    server: self.name.clone(),
                    tool: tool.name.to_string(),
                    structured: tool.output_schema.is_some(),
                    connection: Arc::clone(&self.connection),
                });
                HostTool::new(manifest, handler).map_err(|e| {
                    Error::InvalidBackend(format!("tool `{}` of `{}`: {e}", tool.name, self.name))
                })
            })
            .collect()
    }
}

/// The Locara tool id of MCP tool `tool` of server `server`.
pub fn tool_id(server: &str, tool: &str) -> String {
    let name: String = tool
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '_' | '-') => c,
            _ => '-',
        })
        .collect();
    let name = name.trim_start_matches(['-', '_']);
    format!("{server}.{}", if name.is_empty() { "tool" } else { name })
}

fn manifest(server: &str, version: &Version, tool: &Tool) -> Result<ToolManifest, Error> {
    let id = tool_id(server, &tool.name);
    let id: ToolName = id
        .parse()
        .map_err(|e| Error::InvalidBackend(format!("tool `{}` of `{server}`: {e}", tool.name)))?;
    let annotations = tool.annotations.as_ref();
    let tier = match (
        annotations.and_then(|a| a.read_only_hint),
        annotations.and_then(|a| a.destructive_hint),
    ) {
        (Some(true), _) => SafetyTier::ReadOnly,
        (_, Some(false)) => SafetyTier::SideEffecting,
        _ => SafetyTier::Privileged,
    };
    let output_schema = match &tool.output_schema {
        Some(schema) => Value::Object((**schema).clone()),
        None => json!({
            "type": "object",
            "required": ["text", "content"],
            "properties": {
                "text": {"type": "string", "description": "The text blocks of the result, joined by newlines."},
                "content": {"type": "array", "description": "The result's MCP content blocks."}
            }
        }),
    };
    let description = tool.description.as_deref().unwrap_or_default();
    Ok(HostTool::manifest_template(id, version.clone())
        .with_display_name(tool.title.clone().unwrap_or_else(|| tool.name.to_string()))
        .with_description(format!("{description} (from the MCP server `{server}`)"))
        .with_license("unknown")
        .with_safety_tier(tier)
        .with_input_schema(Value::Object((*tool.input_schema).clone()))
        .with_output_schema(output_schema))
}

/// Forwards calls of one tool to its server.
#[derive(Debug)]
struct Forward {
    server: String,
    tool: String,
    structured: bool,
    connection: Arc<RunningService<RoleClient, ()>>,
}

#[async_trait::async_trait]
impl ToolHandler for Forward {
    async fn call(
        &self,
        arguments: Value,
        _context: &locara_facade::CallContext,
    ) -> Result<Value, HandlerError> {
        let mut params = CallToolRequestParams::new(Cow::Owned(self.tool.clone()));
        params.arguments = arguments.as_object().cloned();
        let result = self.connection.call_tool(params).await.map_err(|e| {
            HandlerError::new(
                format!(
                    "the mcp server `{}` failed to run `{}`: {e}",
                    self.server, self.tool
                ),
                "the server may have stopped; try again, or tell the user",
            )
        })?;
        output(&self.server, self.structured, result)
    }
}

fn output(server: &str, structured: bool, result: CallToolResult) -> Result<Value, HandlerError> {
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    let text = text.join("\n");
    if result.is_error == Some(true) {
        return Err(HandlerError::new(
            if text.is_empty() {
                format!("the mcp server `{server}` reported an error without a message")
            } else {
                text
            },
            "read the message, correct the arguments and call again",
        ));
    }
    if structured {
        return result.structured_content.ok_or_else(|| {
            HandlerError::new(
                format!("the mcp server `{server}` returned no structured content, though its tool declares an output schema"),
                "this is a bug in the server; report it",
            )
        });
    }
    Ok(json!({
        "text": text,
        "content": serde_json::to_value(&result.content).unwrap_or(Value::Null),
    }))
}
