// /openapi.json as a reference a client can be generated from (issue "Messages dialect" item 8):
// a valid OpenAPI 3.1 document naming every request field each route accepts — checked against
// the request parameters the official SDKs themselves send — with streaming responses and enums.
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Record<string, unknown>>>;
};
type Schema = { properties?: Record<string, Schema>; enum?: unknown[]; anyOf?: Schema[]; oneOf?: Schema[] };

let h: Harness;
let doc: Doc;
beforeAll(async () => {
  h = await startHarness();
  doc = (await (await fetch(h.baseURL.replace(/\/v1$/, '/openapi.json'))).json()) as Doc;
});
afterAll(async () => {
  await h?.stop();
});

/** The keys of an interface in an installed SDK's type declarations: what that SDK lets a caller send. */
function sdkParams(pkg: string, file: string, iface: string): string[] {
  const text = readFileSync(new URL(`../../node_modules/${pkg}/${file}`, import.meta.url), 'utf8');
  const start = text.indexOf(`export interface ${iface} {`);
  expect(start).toBeGreaterThan(-1);
  const body = text.slice(start, text.indexOf('\n}', start));
  return [...body.matchAll(/^ {4}([a-z_]+)\??:/gm)].map((m) => m[1]!);
}

const requestSchema = (path: string) =>
  (doc.paths[path]!.post!.requestBody as { content: Record<string, { schema: Schema }> }).content[
    'application/json'
  ]!.schema;

describe('/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc as unknown as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents every parameter the openai SDK can send to chat completions', () => {
    const documented = Object.keys(requestSchema('/v1/chat/completions').properties ?? {});
    const sdk = sdkParams(
      'openai',
      'resources/chat/completions/completions.d.ts',
      'ChatCompletionCreateParamsBase',
    );
    expect(sdk.length).toBeGreaterThan(30);
    expect(sdk.filter((k) => !documented.includes(k))).toEqual([]);
  });

  it('MSG-4 documents every Messages parameter of the Anthropic SDK, or refuses it by name (400)', async () => {
    const refused: string[] = [];
    for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
      const documented = Object.keys(requestSchema(path).properties ?? {});
      const sdk = sdkParams(
        '@anthropic-ai/sdk',
        'resources/messages/messages.d.ts',
        path.endsWith('count_tokens') ? 'MessageCountTokensParams' : 'MessageCreateParamsBase',
      );
      for (const key of sdk.filter((k) => !documented.includes(k))) {
        const res = await fetch(h.baseURL.replace(/\/v1$/, path), {
          method: 'POST',
          headers: { 'x-api-key': h.secret, 'content-type': 'application/json' },
          body: JSON.stringify({
            model: CHAT_MODEL,
            max_tokens: 5,
            messages: [{ role: 'user', content: 'hi' }],
            [key]: {},
          }),
        });
        const body = (await res.json()) as { error: { message: string } };
        expect([key, res.status]).toEqual([key, 400]);
        expect(body.error.message).toContain(key);
        refused.push(key);
      }
    }
    // The code-execution container runs on Anthropic's servers: refused, never dropped.
    expect(refused).toContain('container');
  });

  it('has both Messages routes with x-api-key security, and streaming responses as text/event-stream', () => {
    for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
      const op = doc.paths[path]!.post!;
      expect(op.security).toEqual([{ apiKey: [] }, { bearer: [] }]);
    }
    for (const path of ['/v1/messages', '/v1/chat/completions']) {
      const ok = (doc.paths[path]!.post!.responses as Record<string, { content: Record<string, unknown> }>)[
        '200'
      ]!;
      expect(Object.keys(ok.content)).toEqual(['application/json', 'text/event-stream']);
    }
  });

  it('enumerates finish_reason, stop_reason and roles', () => {
    const text = JSON.stringify(doc);
    expect(text).toContain('"enum":["stop","length","tool_calls","content_filter","function_call"]');
    expect(text).toContain(
      '"enum":["end_turn","max_tokens","stop_sequence","tool_use","pause_turn","refusal"]',
    );
    expect(text).toContain('"enum":["user","assistant"]');
    expect(text).toContain('"enum":["system","developer","user","assistant","tool","function"]');
  });
});
