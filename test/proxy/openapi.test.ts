// /openapi.json as a reference a client can be generated from (issue "Messages dialect" item 8):
// a valid OpenAPI 3.1 document naming every request field each route accepts — checked against
// the request parameters the official SDKs themselves send — with streaming responses and enums.
import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { ENDPOINTS, type Endpoint } from '../../core/endpoints.ts';
import { dialectOfPath } from '../../http/dialect.ts';
import { ENDPOINT_REQUESTS } from '../../proxy/calls/endpoints.ts';
import { batchCreateRequest, messageBatchCreateRequest } from '../../proxy/schemas/batches.ts';
import { embeddingsRequest } from '../../proxy/schemas/embeddings.ts';
import {
  imageEditForm,
  imageGenerationRequest,
  videoCreateForm,
  videoCreateRequest,
} from '../../proxy/schemas/media.ts';
import { countTokensRequest, messagesRequest } from '../../proxy/schemas/messages.ts';
import { chatCompletionRequest } from '../../proxy/schemas/openai.ts';
import { responsesRequest } from '../../proxy/schemas/responses.ts';
import { CHAT_MODEL, type Harness, startHarness } from './harness.ts';

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, Record<string, unknown>>>;
};
type Schema = {
  properties?: Record<string, Schema>;
  enum?: unknown[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  items?: Schema;
  additionalProperties?: boolean | Schema;
  $ref?: string;
  $defs?: Record<string, Schema>;
};

/** Where an object sits in a request body: `messages[].content[].image_url.url`. */
const join = (at: string, key: string) => (at === '' ? key : `${at}.${key}`);

/**
 * Every field a zod schema accepts, as paths, and for each object whether it is closed (unknown
 * keys refused) — read from the schema that validates requests, not from the document.
 */
function zodFields(schema: z.ZodType, at = '', out = new Map<string, 'closed' | 'open'>()) {
  const def = schema._zod.def as unknown as Record<string, unknown> & { type: string };
  switch (def.type) {
    case 'object': {
      const catchall = (def.catchall as z.ZodType | undefined)?._zod.def.type;
      out.set(`${at}{}`, catchall === 'never' ? 'closed' : 'open');
      for (const [key, field] of Object.entries(def.shape as Record<string, z.ZodType>)) {
        out.set(join(at, key), 'closed');
        zodFields(field, join(at, key), out);
      }
      break;
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      zodFields(def.innerType as z.ZodType, at, out);
      break;
    case 'union':
      for (const option of def.options as z.ZodType[]) zodFields(option, at, out);
      break;
    case 'array':
      zodFields(def.element as z.ZodType, `${at}[]`, out);
      break;
    case 'pipe':
      zodFields(def.in as z.ZodType, at, out);
      break;
    case 'record':
      zodFields(def.valueType as z.ZodType, `${at}{*}`, out);
      break;
  }
  return out;
}

/** The same, read from a JSON Schema of the document. */
function docFields(schema: Schema, root: Schema, at = '', out = new Map<string, 'closed' | 'open'>()) {
  if (schema.$ref !== undefined) {
    const name = schema.$ref.replace(/^#\/\$defs\//, '');
    return docFields(root.$defs![name]!, root, at, out);
  }
  if (schema.properties !== undefined) {
    out.set(`${at}{}`, schema.additionalProperties === false ? 'closed' : 'open');
    for (const [key, field] of Object.entries(schema.properties)) {
      out.set(join(at, key), 'closed');
      docFields(field, root, join(at, key), out);
    }
  } else if (typeof schema.additionalProperties === 'object') {
    docFields(schema.additionalProperties, root, `${at}{*}`, out);
  }
  if (schema.items !== undefined) docFields(schema.items, root, `${at}[]`, out);
  for (const variant of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])])
    docFields(variant, root, at, out);
  return out;
}

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

const requestSchema = (path: string, type = 'application/json') =>
  (doc.paths[path]!.post!.requestBody as { content: Record<string, { schema: Schema }> }).content[type]!
    .schema;

/** The zod schema each route validates its body with (or, multipart, reads its fields by). */
const bodies: [string, string, z.ZodType][] = [
  ['/v1/chat/completions', 'application/json', chatCompletionRequest],
  ['/v1/messages', 'application/json', messagesRequest],
  ['/v1/responses', 'application/json', responsesRequest],
  ['/v1/messages/count_tokens', 'application/json', countTokensRequest],
  ['/v1/embeddings', 'application/json', embeddingsRequest],
  ['/v1/images/generations', 'application/json', imageGenerationRequest],
  ['/v1/images/edits', 'multipart/form-data', imageEditForm],
  ['/v1/videos', 'application/json', videoCreateRequest],
  ['/v1/videos', 'multipart/form-data', videoCreateForm],
  ['/v1/batches', 'application/json', batchCreateRequest],
  ['/v1/messages/batches', 'application/json', messageBatchCreateRequest],
];

describe('/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc as unknown as Parameters<Validator['validate']>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it.each(bodies)(
    '%s (%s): every field the request schema accepts is documented, nested ones too, open or closed as enforced',
    (path, type, schema) => {
      const documented = docFields(requestSchema(path, type), requestSchema(path, type));
      const accepted = zodFields(schema);
      expect(accepted.size).toBeGreaterThan(3);
      expect(Object.fromEntries(documented)).toEqual(Object.fromEntries(accepted));
    },
  );

  it('every POST route with a body is in that table, so none escapes the check', () => {
    const withBody = Object.entries(doc.paths)
      .filter(([, ops]) => ops.post?.requestBody !== undefined)
      .map(([path]) => path);
    expect(withBody.sort()).toEqual([...new Set(bodies.map(([path]) => path))].sort());
  });

  it("the endpoint table's paths (core/endpoints.ts) are POST routes in the table's dialect, validated by the table's schemas", () => {
    const app = h.proxy.app;
    for (const path of Object.keys(ENDPOINTS) as Endpoint[]) {
      expect(app.hasRoute({ method: 'POST', url: path }), path).toBe(true);
      expect(dialectOfPath(app, path), path).toBe(ENDPOINTS[path].dialect);
      expect(bodies.find(([p]) => p === path)?.[2], path).toBe(ENDPOINT_REQUESTS[path]);
    }
  });

  it('the chat request is closed at the top, its messages and parts open; the Messages request closed throughout', () => {
    const chat = zodFields(chatCompletionRequest);
    expect(chat.get('{}')).toBe('closed');
    expect(chat.get('messages[]{}')).toBe('open');
    expect(chat.get('messages[].content[]{}')).toBe('open');
    expect(chat.has('messages[].content[].image_url.url')).toBe(true);
    for (const schema of [messagesRequest, countTokensRequest]) {
      const open = [...zodFields(schema)].filter(([at, how]) => at.endsWith('{}') && how === 'open');
      // Free-form by nature: a tool's JSON Schema and a tool call's input.
      expect(open.map(([at]) => at)).toEqual([]);
    }
  });

  it('the event-stream responses document their frames', () => {
    let streams = 0;
    for (const [path, ops] of Object.entries(doc.paths)) {
      const ok = (
        ops.post?.responses as Record<string, { content: Record<string, { schema: Schema }> }> | undefined
      )?.['200'];
      const events = ok?.content['text/event-stream']?.schema;
      if (events === undefined) continue;
      streams++;
      const variants = events.oneOf ?? events.anyOf ?? [events];
      expect([path, variants.length > 0]).toEqual([path, true]);
      for (const v of variants)
        expect([path, Object.keys(v.properties ?? {}).length > 0]).toEqual([path, true]);
    }
    expect(streams).toBe(3); // chat completions, messages and responses
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

  it('CHAT-1 accepts what the openai SDK and editor tools send — every parameter, forwarded to the engine (web search aside)', async () => {
    const sims = h.sims.map((x) => x.received().length);
    const params = {
      model: CHAT_MODEL,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Hi', cache_control: { type: 'ephemeral' } }] },
      ],
      max_completion_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
      parallel_tool_calls: true,
      store: false,
      metadata: { session: 'abc' },
      reasoning_effort: 'low',
      service_tier: 'auto',
      user: 'user-1',
      seed: 7,
      logprobs: false,
      top_logprobs: 0,
      prediction: { type: 'content', content: 'Hello' },
      modalities: ['text'],
      web_search_options: {},
      verbosity: 'low',
      prompt_cache_key: 'project-1',
      safety_identifier: 'hash-1',
      temperature: 0.2,
      top_p: 0.9,
      frequency_penalty: 0,
      presence_penalty: 0,
      top_k: 20,
      chat_template_kwargs: { enable_thinking: false },
    } as const;
    const stream = await h
      .client()
      .chat.completions.create(params as unknown as Parameters<OpenAI['chat']['completions']['create']>[0]);
    let text = '';
    for await (const c of stream as AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>)
      text += c.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
    const [sent] = h.sims
      .flatMap((x, i) => x.received().slice(sims[i]))
      .filter((r) => r.path === '/v1/chat/completions')
      .map((r) => r.json as Record<string, unknown>);
    // web_search_options is accepted and left out: engines do not search the web (./hosted-tools.test.ts).
    const {
      messages: _m,
      model: _model,
      max_completion_tokens: _max,
      stream_options: _so,
      web_search_options: _ws,
      ...rest
    } = params;
    expect(sent).toMatchObject(rest);
    expect(sent).not.toHaveProperty('web_search_options');
  });

  it('CHAT-1 refuses a parameter it does not list, naming it, as OpenAI does — and vLLM parameters that steer the fleet', async () => {
    for (const [extra, param] of [
      [{ temprature: 0.5 }, 'temprature'],
      [{ reasoning: { effort: 'high' } }, 'reasoning'],
      [{ priority: -100 }, 'priority'],
      [{ chat_template: '{{ messages }}' }, 'chat_template'],
      [{ kv_transfer_params: {} }, 'kv_transfer_params'],
      [{ best_of: 4 }, 'best_of'],
      [
        { messages: [{ role: 'user', content: [{ type: 'hologram', data: 'x' }] }] },
        'messages[0].content[0].type',
      ],
    ] as const) {
      const res = await fetch(`${h.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${h.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: CHAT_MODEL, messages: [{ role: 'user', content: 'hi' }], ...extra }),
      });
      const body = (await res.json()) as { error: { param: string; message: string; type: string } };
      expect([param, res.status, body.error.param]).toEqual([param, 400, param]);
      expect(body.error.type).toBe('invalid_request_error');
    }
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

  it('documents the Responses API: POST /v1/responses (JSON or event stream), GET and DELETE /v1/responses/{id}', () => {
    const op = doc.paths['/v1/responses']!.post!;
    const ok = (op.responses as Record<string, { content: Record<string, { schema: Schema }> }>)['200']!;
    expect(Object.keys(ok.content)).toEqual(['application/json', 'text/event-stream']);
    expect(Object.keys(ok.content['application/json']!.schema.properties ?? {})).toEqual(
      expect.arrayContaining(['id', 'object', 'status', 'output', 'usage']),
    );
    expect(Object.keys(requestSchema('/v1/responses').properties ?? {})).toEqual(
      expect.arrayContaining(['input', 'instructions', 'tools', 'text', 'reasoning', 'previous_response_id']),
    );
    expect(doc.paths['/v1/responses/{id}']!.get).toBeDefined();
    expect(doc.paths['/v1/responses/{id}']!.delete).toBeDefined();
  });

  it('the chat completion response documents message.tool_calls and logprobs (a generated client can see a tool call)', () => {
    const ok = (
      doc.paths['/v1/chat/completions']!.post!.responses as Record<
        string,
        { content: Record<string, { schema: Schema }> }
      >
    )['200']!.content['application/json']!.schema;
    const text = JSON.stringify(ok);
    expect(text).toContain('"tool_calls"');
    expect(text).toContain('"logprobs"');
    expect(text).toContain('"arguments"');
  });

  it('VID-1 documents the video content redirect (302) and the multipart create’s input_reference', () => {
    const content = doc.paths['/v1/videos/{id}/content']!.get!.responses as Record<
      string,
      { description: string }
    >;
    expect(content['302']!.description).toMatch(/Location/);
    const form = requestSchema('/v1/videos', 'multipart/form-data');
    expect(Object.keys(form.properties ?? {})).toContain('input_reference');
    expect(Object.keys(requestSchema('/v1/videos').properties ?? {})).not.toContain('input_reference');
  });

  it('enumerates finish_reason, stop_reason and roles', () => {
    const text = JSON.stringify(doc);
    expect(text).toContain('"enum":["stop","length","tool_calls","content_filter","function_call"]');
    expect(text).toContain(
      '"enum":["end_turn","max_tokens","stop_sequence","tool_use","pause_turn","refusal"]',
    );
    expect(text).toContain('"enum":["user","assistant","system"]');
    expect(text).toContain('"enum":["system","developer","user","assistant","tool","function"]');
  });
});
