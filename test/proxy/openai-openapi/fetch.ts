// Fetches OpenAI's published OpenAPI document (the openai/openai-openapi repository) and keeps, as
// the fixture ./schemas.json, the component schemas the proxy's OpenAI-dialect answers must
// satisfy (a response, its stream events, input item lists, chat completions and their chunks) and
// every schema they reference — with the repository, path and commit they came from.
//
//   npx tsx test/proxy/openai-openapi/fetch.ts [<commit> | <path to a checkout's openapi.json> <commit>]
//
// With a commit, the file is downloaded from raw.githubusercontent.com at that commit (default:
// the commit the fixture names now, so rerunning reproduces it); with a local file, that file is
// read and the commit given is the one named. The fixture is what the tests read: they never go
// to the network.
import { readFileSync, writeFileSync } from 'node:fs';

const REPOSITORY = 'openai/openai-openapi';
const PATH = 'openapi.json';
const OUT = new URL('./schemas.json', import.meta.url);

/** The schemas checked, and (by reference) everything they use. */
export const ROOTS = [
  'Response',
  'ResponseStreamEvent',
  'ResponseItemList',
  'CreateChatCompletionResponse',
  'CreateChatCompletionStreamResponse',
] as const;

type Json = unknown;

function refsIn(node: Json, into: Set<string>): void {
  if (Array.isArray(node)) for (const v of node) refsIn(v, into);
  else if (node !== null && typeof node === 'object')
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/'))
        into.add(v.slice('#/components/schemas/'.length));
      else refsIn(v, into);
    }
}

/** The named schemas and every schema they reach. */
export function closure(schemas: Record<string, Json>, roots: readonly string[]): Record<string, Json> {
  const kept: Record<string, Json> = {};
  const todo = [...roots];
  while (todo.length > 0) {
    const name = todo.pop()!;
    if (name in kept) continue;
    const schema = schemas[name];
    if (schema === undefined) throw new Error(`${PATH} has no components.schemas.${name}`);
    kept[name] = schema;
    const refs = new Set<string>();
    refsIn(schema, refs);
    todo.push(...refs);
  }
  return Object.fromEntries(
    Object.keys(kept)
      .sort()
      .map((k) => [k, kept[k]]),
  );
}

async function main(): Promise<void> {
  const [first, second] = process.argv.slice(2);
  let text: string;
  let commit: string;
  if (second !== undefined) {
    text = readFileSync(first!, 'utf8');
    commit = second;
  } else {
    commit = first ?? (JSON.parse(readFileSync(OUT, 'utf8')) as { source: { commit: string } }).source.commit;
    const url = `https://raw.githubusercontent.com/${REPOSITORY}/${commit}/${PATH}`;
    const res = await fetch(url);
    if (!res.ok) throw new Error(`${url}: ${res.status}`);
    text = await res.text();
  }
  if (!/^[0-9a-f]{40}$/.test(commit))
    throw new Error(`name the commit in full (40 hex digits), not ${commit}`);
  const doc = JSON.parse(text) as {
    openapi: string;
    info: { version: string };
    components: { schemas: Record<string, Json> };
  };
  const fixture = {
    source: {
      repository: REPOSITORY,
      path: PATH,
      commit,
      openapi: doc.openapi,
      apiVersion: doc.info.version,
    },
    roots: ROOTS,
    schemas: closure(doc.components.schemas, ROOTS),
  };
  writeFileSync(OUT, `${JSON.stringify(fixture, null, 1)}\n`);
  console.log(
    `${Object.keys(fixture.schemas).length} schemas from ${REPOSITORY}@${commit} → ${OUT.pathname}`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
