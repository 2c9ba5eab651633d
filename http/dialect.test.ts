// The dialect of an unrouted request, from what the server's routes declared (no path in http/).
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { RouteDialects } from './dialect.ts';
import { errorsPlugin } from './errors.ts';
import { requestIdPlugin } from './request-id.ts';

describe('RouteDialects', () => {
  it.each([
    ['/v1/messages', 'messages'],
    ['/V1/Messages', 'messages'],
    ['/v1/messages?beta=true', 'messages'],
    ['/v1/messages/count_tokens', 'messages'],
    ['/v1/messages/unknown/deeper', 'messages'],
    ['/v1/messagesx', 'openai'],
    ['/v1/chat/completions', 'openai'],
    ['/v1/messages/openai-below', 'openai'],
    ['/v1/messages/openai-below/x', 'openai'],
    ['/v1/videos/abc', 'messages'],
    ['/elsewhere', 'openai'],
    [undefined, 'openai'],
  ] as const)('%s → %s', (url, dialect) => {
    const t = new RouteDialects();
    t.add('/v1/messages', 'messages');
    t.add('/v1/messages/count_tokens', 'messages');
    t.add('/v1/chat/completions', 'openai');
    t.add('/v1/messages/openai-below', 'openai');
    t.add('/v1/videos/:id', 'messages'); // a parameter: its static part owns the subtree
    expect(t.of(url)).toBe(dialect);
  });

  it('a server with no declaring route answers everything in the default dialect', () => {
    expect(new RouteDialects().of('/v1/messages')).toBe('openai');
  });

  it("a server's unknown paths answer in the dialect its routes declared there, with the Messages request-id header", async () => {
    const app = Fastify();
    await app.register(requestIdPlugin);
    await app.register(errorsPlugin);
    await app.register(
      async (api) => {
        api.post('/messages', { config: { dialect: 'messages' } }, async () => ({}));
      },
      { prefix: '/v1' },
    );
    const messages = await app.inject({ method: 'GET', url: '/v1/messages/nope' });
    expect(messages.statusCode).toBe(404);
    expect(messages.json().type).toBe('error'); // the Messages shape
    expect(messages.headers['request-id']).toBe(messages.headers['x-request-id']);
    const openai = await app.inject({ method: 'GET', url: '/v1/other' });
    expect(openai.json().error.code).toBe('not_found');
    expect(openai.headers['request-id']).toBeUndefined();
    await app.close();
  });
});
