// The Node half of `benches/sdk.rs`: times `loc.run` of text.chunk from Node.
//
// Usage: node bench.mjs HOME WARMUP SAMPLES TEXT MAX_CHARS, run from a project where
// @locara/sdk is installed (`cargo xtask sdk bench` installs the release tarball); prints the
// per-call times in nanoseconds as a JSON list.

import assert from 'node:assert/strict';
import { Locara } from '@locara/sdk';

const [home, warmup, samples, text, maxChars] = process.argv.slice(2);
const loc = await Locara.open({ home });
const args = { text, max_chars: Number(maxChars) };
for (let i = 0; i < Number(warmup); i += 1) {
  assert.ok((await loc.run('text.chunk', args)).output.count > 1);
}
const times = [];
for (let i = 0; i < Number(samples); i += 1) {
  const started = process.hrtime.bigint();
  await loc.run('text.chunk', args);
  times.push(Number(process.hrtime.bigint() - started));
}
console.log(JSON.stringify(times));
