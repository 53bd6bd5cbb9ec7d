// A program written against @locara/sdk's declarations; `cargo xtask sdk test` type-checks it
// with `tsc --strict` (it is never run). Each `@ts-expect-error` must be an error.
import { Locara, LocaraError, file, type RunResult, type ToolTypes } from '@locara/sdk';

export async function main(bytes: Uint8Array): Promise<string> {
  const loc = await Locara.open({ home: '/srv/locara', workspace: '/srv/docs', allowWrite: false });
  // Tool arguments and outputs are typed from the manifests.
  const parts: RunResult<ToolTypes.PdfSplitOutput> = await loc.tools.pdfSplit({ source: file('a.pdf'), ranges: ['1-2'] });
  const names: string[] = parts.files.map((f) => f.name);
  const text = await loc.tools.ocr({ source: bytes });
  // @ts-expect-error: text.chunk's `text` is a string
  await loc.tools.textChunk({ text: 7 });
  // @ts-expect-error: `ranges` is a list of page lists
  await loc.tools.pdfSplit({ source: bytes, ranges: '1-2' });
  // @ts-expect-error: `source` is required
  await loc.tools.ocr({});
  // Any tool by id.
  await loc.tools['pdf.split']({ source: bytes, ranges: ['1'] });
  for await (const event of loc.chat({ prompt: 'hi', tools: ['filesystem.*'] })) {
    if (event.type === 'text') names.push(event.text);
  }
  try {
    await loc.run('text.chunk', { text: 'a' }, { seed: 1 });
  } catch (error) {
    if (error instanceof LocaraError) return `${error.code} ${error.hint} ${error.limit ?? ''}`;
  }
  return `${names.join(',')} ${parts.output.page_count} ${JSON.stringify(text.output)}`;
}
