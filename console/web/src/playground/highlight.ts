// Code in a reply, highlighted (issue 37 item 2): highlight.js's core with the languages people
// ask models for most — not its full bundle of ~190 languages, which would multiply the page's size.
// A block in another language (or none) is shown plain, escaped by React like any text.
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import go from 'highlight.js/lib/languages/go';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';

for (const [name, language] of Object.entries({
  bash,
  css,
  go,
  javascript,
  json,
  python,
  rust,
  sql,
  typescript,
  xml,
  yaml,
}))
  hljs.registerLanguage(name, language);

/** highlight.js's HTML for `code` (its own escaping), or null for a language it does not have here. */
export function highlighted(
  code: string,
  language: string | undefined,
): { html: string; language: string } | null {
  const lang = language?.toLowerCase();
  if (!lang || !hljs.getLanguage(lang)) return null;
  const r = hljs.highlight(code, { language: lang, ignoreIllegals: true });
  return { html: r.value, language: r.language ?? lang };
}
