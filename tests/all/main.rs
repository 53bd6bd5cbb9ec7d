//! Cross-crate integration tests: one binary, one module per topic.

// Tampering, untrusted keys and rollbacks, refused through the facade as a host sees them.
mod tampering;
// A host that uses only manifest + registry + sandbox, without the pipeline.
mod minimal_host;
// Tools an app ships itself, verified against the host's trusted keys.
mod app_tools;
// A tool written with locara-pdk's #[tool], shipped by an app.
mod pdk;
// The state capabilities: kv, progress and seeded random numbers.
mod state;
// `locara new tool`, `build`, `publish` and `run`: a tool written from nothing.
mod authoring;
// A tool written in C, built with clang and wasi-libc.
mod c_guest;
// Issue 14's escape through a symlinked /tmp/out, and links below an output directory.
mod escape;
// What the code-exec tests share.
mod code_exec_support;
// The code-exec.lua tool: a Lua interpreter in the sandbox, on both engines.
mod code_exec_lua;
// code-exec.js: an upstream QuickJS-ng module made a tool by its driver script.
mod code_exec_js;
// code-exec.python: CPython 3.11 built from source, pre-initialized with its driver script.
mod code_exec_python;
// What the document, image and audio tool tests share.
mod media_support;
// image.resize and image.format-convert against Pillow.
mod media_image;
// audio.detect-silence on espeak-ng speech with sox-made silences.
mod media_audio;
// pdf.extract-text and pdf.split against poppler and qpdf.
mod media_pdf;
// ocr on poppler-rendered text against poppler's text layer.
mod media_ocr;
// audio.transcribe on espeak-ng speech (Wasmtime).
mod media_transcribe;
// `locara serve`: the MCP server driven by the official Python MCP client, stdio and HTTP.
mod mcp_server;
// An external MCP server (Python SDK) as a backend: its tools behind Locara's pipeline.
mod mcp_backend;
// Host services for wasm tools: web.fetch on loopback, text tools against a real local model.
mod host_services;
// Issue 15's reach: web.fetch, llm.chat and redirects over https, each hop's address checked.
mod egress;
// The LLM tool loop: a real model (llama.cpp on loopback) calling tools, in both API formats.
mod chat;
// Code mode: programs in Python, JS and Lua calling tools through the gateway.
mod code_mode;
// Chains: named steps, when, for_each, limits, errors.
mod chains;
// `locara serve --http --auth`: API keys and JWTs bound to apps, rate limits and caps.
mod serve_auth;
// Tools through an OCI registry (docker-registry on loopback): push, pull, install, refusals.
mod oci;
// Three replicas behind haproxy, tools from the OCI registry; one stopped mid-run.
mod scale_out;
// deploy/: the Kubernetes manifests and the Dockerfile, validated offline.
mod deploy;
