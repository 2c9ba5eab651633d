import { describe, expect, it } from 'vitest';
import { ApiError } from '../../core/errors.ts';
import { streamRefusal } from './call.ts';

describe('an error first frame', () => {
  it('ERR-2 with a 4xx code (vLLM) is the client’s invalid_request, with the engine’s message and param', () => {
    const err = streamRefusal({
      message: 'token_id(s) [999999] in stop_token_ids contain out-of-vocab token ids.',
      type: 'BadRequestError',
      param: 'stop_token_ids',
      code: 400,
    });
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 400, code: 'invalid_request', param: 'stop_token_ids' });
    expect(err!.message).toContain('out-of-vocab');
    expect(err!.retryAfterS).toBeUndefined();
    expect(streamRefusal({ code: 422 })!.message).toBe('The engine rejected the request (422).');
  });

  it('with a 5xx, a 404, a string code or none is the engine failing (null: failover, health)', () => {
    for (const error of [
      { message: 'boom', type: 'server_error', code: 500 },
      { message: 'no such model', code: 404 },
      { message: 'simulated', type: 'server_error', code: 'server_error' },
      { message: 'x' },
      'just text',
      null,
    ])
      expect(streamRefusal(error)).toBeNull();
  });
});
