//! `serve`'s log and traces: `tracing-subscriber` on stderr (text, or one JSON object a line),
//! filtered by `--log`/`LOCARA_LOG`, and, when a collector is named, an OpenTelemetry layer
//! that exports the spans over OTLP/HTTP (protobuf) from a batch processor's own thread.

use std::sync::OnceLock;

use anyhow::{Context as _, format_err};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::{Layer as _, layer::SubscriberExt as _, util::SubscriberInitExt as _};

use crate::cli::LogFormat;

/// The log format [`init`] installed.
static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Says what the server is doing on stderr: a plain line in the text format (what a person
/// reads, and what scripts wait for: `listening on URL`), an `info` event in the JSON one (so
/// every line of the log parses).
pub(crate) fn say(message: &str) {
    match FORMAT.get() {
        Some(LogFormat::Json) => tracing::info!(target: "locara::serve", "{message}"),
        _ => eprintln!("{message}"),
    }
}

/// What must outlive the server: the span exporter, flushed when dropped.
#[derive(Debug)]
pub(crate) struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(error) = provider.shutdown()
        {
            eprintln!("locara: the last spans were not exported: {error}");
        }
    }
}

/// Installs the logger, as `format` and `filter` say, and the OTLP exporter when `otlp` (or
/// an `OTEL_EXPORTER_OTLP_*ENDPOINT` variable) names a collector. An invalid filter is an
/// error, not a silent default: an operator who asked for `debug` should not get nothing.
pub(crate) fn init(
    format: LogFormat,
    filter: &str,
    otlp: Option<&str>,
) -> anyhow::Result<Telemetry> {
    let env_filter = |what| {
        tracing_subscriber::EnvFilter::try_new(filter).with_context(|| {
            format!("invalid {what} filter `{filter}` (e.g. `info`, `locara_mcp=debug,info`)")
        })
    };
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = match format {
        LogFormat::Text => fmt.with_ansi(false).boxed(),
        LogFormat::Json => fmt
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .boxed(),
    };
    let provider = otlp_provider(otlp)?;
    let otel = match &provider {
        Some(provider) => Some(
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("locara"))
                .with_filter(env_filter("trace")?),
        ),
        None => None,
    };
    tracing_subscriber::registry()
        .with(fmt.with_filter(env_filter("log")?))
        .with(otel)
        .try_init()
        .map_err(|e| format_err!("cannot install the logger: {e}"))?;
    let _ = FORMAT.set(format);
    if provider.is_some() {
        let endpoint = otlp.map_or_else(
            || "the collector OTEL_EXPORTER_OTLP_*ENDPOINT names".to_owned(),
            str::to_owned,
        );
        say(&format!("exporting traces over OTLP to {endpoint}"));
    }
    Ok(Telemetry { provider })
}

/// The tracer provider exporting to the collector at `endpoint` (`/v1/traces` added), or to
/// the one the standard variables name; none when neither is set.
fn otlp_provider(endpoint: Option<&str>) -> anyhow::Result<Option<SdkTracerProvider>> {
    let from_env = [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    if endpoint.is_none() && !from_env {
        return Ok(None);
    }
    // reqwest, built without a crypto provider of its own, asks for the process's default:
    // ring, as everywhere else, for an https collector.
    let _ = rustls::crypto::ring::default_provider().install_default();
    use opentelemetry_otlp::WithExportConfig as _;
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
    if let Some(endpoint) = endpoint {
        exporter = exporter.with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')));
    }
    let exporter = exporter
        .build()
        .context("cannot set up the OTLP exporter")?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("locara");
    }
    Ok(Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build(),
    ))
}
