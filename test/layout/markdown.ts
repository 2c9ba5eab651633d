// What the docs check reads from markdown and from code comments, as pure functions: a file's
// headings and the anchors GitHub makes of them, its relative links, and the citations code makes
// of a doc's sections (`docs/faults.md "Faults"`). Only what our docs use is parsed: ATX headings,
// inline links, fenced code (skipped), inline code (skipped).

/** The anchor GitHub gives a heading (github-slugger's rule on the rendered text). */
export function githubSlug(heading: string): string {
  return plainText(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** A heading as it renders: link text kept, code and emphasis marks dropped. */
export function plainText(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim();
}

/** Lines outside fenced code blocks, with their 1-based numbers. */
function proseLines(markdown: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let fence: string | null = null;
  markdown.split('\n').forEach((text, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(text)?.[1];
    if (marker !== undefined && (fence === null || marker.startsWith(fence))) {
      fence = fence === null ? marker : null;
      return;
    }
    if (fence === null) out.push({ text, line: i + 1 });
  });
  return out;
}

/** The text of every ATX heading, in order. */
export function headings(markdown: string): string[] {
  return proseLines(markdown).flatMap(({ text }) => {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text);
    return m ? [m[1]!] : [];
  });
}

/** Every anchor the file has: a repeated heading gets -1, -2… as on GitHub. */
export function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const heading of headings(markdown)) {
    const slug = githubSlug(heading);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

export interface Link {
  target: string;
  line: number;
}

/** Inline links and images outside code, in order; the target without a title. */
export function links(markdown: string): Link[] {
  const out: Link[] = [];
  for (const { text, line } of proseLines(markdown)) {
    const prose = text.replace(/`[^`]*`/g, (code) => ' '.repeat(code.length));
    for (const m of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      out.push({ target: m[1]!, line });
  }
  return out;
}

export interface Citation {
  /** The cited file from the repository root: README.md or docs/<name>.md. */
  doc: string;
  section: string;
  line: number;
}

// The README or a docs/ file, then a section title in double quotes (`docs/money.md "The durable
// journal"`), also when a comment wraps between the file and the quote or inside the quote (`//`,
// `#`, `*` continuation marks are dropped), and with JSON's escaped quotes. A path ending in
// README.md elsewhere (operator/README.md) is not ours.
const CITATION =
  /(?<![\w./-])(README(?:\.md)?|docs\/[\w-]+\.md)[ \t]*(?:\n[ \t]*(?:\/\/|#|\*)?[ \t]*)?\\?"([^"\\]{1,100})\\?"/g;

/** Every section citation of README.md or a docs/ file in a source file's text. */
export function citations(source: string): Citation[] {
  return [...source.matchAll(CITATION)].map((m) => ({
    doc: m[1]!.startsWith('docs/') ? m[1]! : 'README.md',
    section: m[2]!.replace(/\s*\n\s*(?:\/\/|#|\*)?\s*/g, ' ').trim(),
    line: source.slice(0, m.index).split('\n').length,
  }));
}

/** Whether a citation names one of the headings: the whole heading, or its start up to a word's end. */
export function namesHeading(section: string, headingTexts: readonly string[]): boolean {
  const wanted = section.toLowerCase();
  return headingTexts.some((h) => {
    const text = plainText(h).toLowerCase();
    return text === wanted || (text.startsWith(wanted) && /^\W/.test(text.slice(wanted.length)));
  });
}
