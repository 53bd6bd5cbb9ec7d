// Types of @locara/sdk. The tools' own argument and output types are in ./tools.d.ts,
// generated from their manifests by `locara tools export --format typescript-module`.

import type * as ToolTypes from './tools.js';

export type { ToolTypes };

/** An error report: what failed, where, and what to do. */
export interface ErrorReport {
  /** `invalid_input`, `capability_denied`, `limit_exceeded`, `tool_error`, `not_found`, ... */
  code: string;
  message: string;
  hint: string;
  violations?: { pointer: string; constraint: string; message: string }[];
  /** For `limit_exceeded`: `fuel`, `memory`, `wall_time`, `output_bytes`, ... */
  limit?: string;
  /** For `tool_error`: the tool's exit code. */
  exit_code?: number;
}

/** A call that could not run, or a tool that ran and failed. */
export class LocaraError extends Error {
  readonly code: string;
  readonly hint: string;
  readonly violations: { pointer: string; constraint: string; message: string }[];
  readonly limit?: string;
  readonly exitCode?: number;
  readonly report: ErrorReport;
  /** When the tool ran and failed: what it produced (stderr, stats). */
  readonly result?: RunResult<unknown>;
}

/** A file on disk, passed to a tool by its bytes. */
export class LocaraFileRef {
  readonly path: string;
}

/** `file(path)`: the file at `path` (or a file: URL), as a tool argument. */
export function file(path: string | URL): LocaraFileRef;

/** A file argument: bytes, `file(path)`, a file: URL, or `{path}` in the workspace / `{base64}`. */
export type FileInput = Uint8Array | ArrayBuffer | LocaraFileRef | URL | { path: string } | { base64: string };

/** The tool types take the code-mode file argument; the SDK takes any {@link FileInput}. */
type WithFiles<T> = T extends ToolTypes.FileArgument
  ? FileInput
  : T extends readonly (infer U)[]
    ? WithFiles<U>[]
    : T extends object
      ? { [K in keyof T]: WithFiles<T[K]> }
      : T;

/** A file a tool produced. */
export class ProducedFile {
  readonly name: string;
  readonly data: Uint8Array;
  readonly sha256: string;
  /** Writes it into `dir` under its base name, never over an existing file. */
  save(dir: string): Promise<string>;
}

/** What a call produced. */
export interface RunResult<Output> {
  /** The tool that ran, `id@version`. */
  tool: string;
  ok: true;
  output: Output;
  files: ProducedFile[];
  stderr?: string;
  stats: Record<string, unknown>;
  approval?: { approved: boolean; by: string; reason: string };
  receipt?: Record<string, unknown>;
  calls?: Record<string, unknown>[];
}

/** Options of one call. */
export interface RunOptions {
  /** The directory the tool sees at `/workspace` (default: the app's). */
  workspace?: string;
  /** Ask for a signed receipt (the home needs a receipt key). */
  receipt?: boolean;
  /** Seeds the tool's random numbers. */
  seed?: number;
  /** Whom the call is made for. */
  user?: string;
}

type SdkTool<F> = F extends (args: infer A) => Promise<{ output: infer O }>
  ? (args: WithFiles<A>, options?: RunOptions) => Promise<RunResult<O>>
  : never;

/** Every callable tool, named in camelCase (`pdf.split` is `pdfSplit`), or by id. */
export type Tools = { [K in keyof ToolTypes.Tools]: SdkTool<ToolTypes.Tools[K]> } & {
  [id: string]: (args?: Record<string, unknown>, options?: RunOptions) => Promise<RunResult<unknown>>;
};

/** How to open Locara. */
export interface OpenOptions {
  /** The Locara home (default `$LOCARA_HOME`), the same the `locara` command uses. */
  home?: string;
  /** An app manifest: its tools and grants bound every call. */
  app?: string;
  engine?: 'wasmtime' | 'wasmi';
  /** The directory tools see at `/workspace`; granted read-only unless `allowWrite`. */
  workspace?: string;
  allowWrite?: boolean;
  user?: string;
  /** An OpenAI-compatible API base, e.g. `http://127.0.0.1:8080/v1`. */
  llm?: string;
  llmModel?: string;
  llmApiKey?: string;
  /** Hosts tools may reach (without an app manifest). */
  allowHosts?: string[];
  /** Approve every privileged call (they are refused otherwise). */
  approveAll?: boolean;
}

/** A tool in a listing or search result. */
export type ToolSummary = ToolTypes.ToolSummary;

/** A chat event, as it happens. */
export type ChatEvent =
  | { type: 'step'; step: number }
  | { type: 'text'; step: number; text: string }
  | { type: 'tool_call'; step: number; call: Record<string, unknown> };

/** How a chat ended: the model's text, every step, the conversation to carry on. */
export interface ChatTranscript {
  /** The model's last answer, when it gave one. */
  answer?: string;
  /** `final_answer`, `max_steps`, `token_budget`, `time_budget`, `model_error`. */
  stop_reason: string;
  steps: Record<string, unknown>[];
  messages: unknown[];
  usage: Record<string, number>;
  error?: ErrorReport;
  [key: string]: unknown;
}

export interface ChatRequest {
  prompt?: string;
  messages?: unknown[];
  model?: { baseUrl: string; model: string; format?: 'openai' | 'anthropic'; apiKey?: string };
  system?: string;
  /** Ids or globs (`filesystem.*`); default every callable tool. */
  tools?: string[];
  maxSteps?: number;
  maxTokens?: number;
  timeoutMs?: number;
  maxOutputTokens?: number;
  temperature?: number;
  seed?: number;
  workspace?: string;
}

/** A chat in progress: iterate it for its events; `result` is the transcript. */
export class Chat implements AsyncIterable<ChatEvent> {
  readonly result: Promise<ChatTranscript>;
  [Symbol.asyncIterator](): AsyncIterator<ChatEvent>;
  cancel(): void;
}

export interface ChainStep {
  tool: string;
  arguments?: Record<string, unknown>;
  id?: string;
  when?: unknown;
  for_each?: unknown;
  as?: string;
  workspace?: string;
}

export class Locara {
  private constructor();
  static open(options?: OpenOptions): Promise<Locara>;
  readonly tools: Tools;
  list(): ToolSummary[];
  search(query: string, limit?: number): ToolSummary[];
  describe(tool: string): Record<string, unknown>;
  exportApi(language?: 'typescript' | 'typescript-module' | 'python' | 'python-module'): string;
  run(tool: string, args?: Record<string, unknown>, options?: RunOptions): Promise<RunResult<unknown>>;
  runBatch(calls: ({ tool: string; arguments?: Record<string, unknown> } & RunOptions)[]): Promise<{
    ok: boolean;
    results: Record<string, unknown>[];
  }>;
  runChain(steps: ChainStep[], options?: { maxCalls?: number; wallTimeMs?: number }): Promise<Record<string, unknown>>;
  chat(request: ChatRequest): Chat;
}
