// Frames as real engines send them, byte for byte in their field order, for the fast-path tests
// (./chunks.test.ts, ../../dialects/openai/completion.test.ts). vLLM 0.32 (its serving code; the
// issue's CPU run): pydantic's model_dump_json(exclude_unset=True) puts `prompt_token_ids` after usage in the first
// frame, and the final usage frame carries prompt_tokens_details and system_fingerprint. llama.cpp
// (the server the tests build, scripts/build-llamacpp.sh; its frames checked against this file's
// byte for byte but for ids and times): `choices` first, usage only in the final frame, `timings`
// after it.
export const REAL_FRAMES = {
  vllmFirst:
    '{"id":"chatcmpl-9f1","object":"chat.completion.chunk","created":1764000000,"model":"served-name","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":12,"total_tokens":12,"completion_tokens":0},"prompt_token_ids":null}',
  vllmContent:
    '{"id":"chatcmpl-9f1","object":"chat.completion.chunk","created":1764000000,"model":"served-name","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null,"token_ids":null}],"usage":{"prompt_tokens":12,"total_tokens":13,"completion_tokens":1}}',
  vllmLastToken:
    '{"id":"chatcmpl-9f1","object":"chat.completion.chunk","created":1764000000,"model":"served-name","choices":[{"index":0,"delta":{"content":"."},"logprobs":null,"finish_reason":"length","stop_reason":null,"token_ids":null}],"usage":{"prompt_tokens":12,"total_tokens":20,"completion_tokens":8}}',
  vllmUsage:
    '{"id":"chatcmpl-9f1","object":"chat.completion.chunk","created":1764000000,"model":"served-name","choices":[],"usage":{"prompt_tokens":1794,"total_tokens":1802,"completion_tokens":8,"prompt_tokens_details":{"cached_tokens":1792}},"system_fingerprint":"vllm-0.32.0-3f9a1c2e"}',
  llamacppFirst:
    '{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"created":1764000000,"id":"chatcmpl-Qx1","model":"served-name","system_fingerprint":"b0-unknown","object":"chat.completion.chunk"}',
  llamacppContent:
    '{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi"}}],"created":1764000000,"id":"chatcmpl-Qx1","model":"served-name","system_fingerprint":"b0-unknown","object":"chat.completion.chunk"}',
  // with timings_per_token (a client may ask): timings on every frame
  llamacppContentTimings:
    '{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" there"}}],"created":1764000000,"id":"chatcmpl-Qx1","model":"served-name","system_fingerprint":"b0-unknown","object":"chat.completion.chunk","timings":{"cache_n":1792,"prompt_n":2,"prompt_ms":1.2,"prompt_per_token_ms":0.6,"prompt_per_second":1666.6,"predicted_n":2,"predicted_ms":0.8,"predicted_per_token_ms":0.4,"predicted_per_second":2500.0}}',
  llamacppFinish:
    '{"choices":[{"finish_reason":"length","index":0,"delta":{}}],"created":1764000000,"id":"chatcmpl-Qx1","model":"served-name","system_fingerprint":"b0-unknown","object":"chat.completion.chunk"}',
  llamacppUsage:
    '{"choices":[],"created":1764000000,"id":"chatcmpl-Qx1","model":"served-name","system_fingerprint":"b0-unknown","object":"chat.completion.chunk","usage":{"completion_tokens":8,"prompt_tokens":12,"total_tokens":20,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"cache_n":0,"prompt_n":12,"prompt_ms":1.2,"prompt_per_token_ms":0.1,"prompt_per_second":10000.0,"predicted_n":8,"predicted_ms":3.1,"predicted_per_token_ms":0.3875,"predicted_per_second":2580.6}}',
} as const;

/** Non-streamed answers in the same engines' shapes. */
export const REAL_ANSWERS = {
  vllm: '{"id":"chatcmpl-9f2","object":"chat.completion","created":1764000000,"model":"served-name","choices":[{"index":0,"message":{"role":"assistant","content":"hi","refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning":null},"logprobs":null,"finish_reason":"length","stop_reason":null,"token_ids":null}],"service_tier":null,"system_fingerprint":"vllm-0.32.0-3f9a1c2e","usage":{"prompt_tokens":12,"total_tokens":13,"completion_tokens":1,"prompt_tokens_details":null},"prompt_logprobs":null,"prompt_token_ids":null,"kv_transfer_params":null}',
  llamacpp:
    '{"choices":[{"finish_reason":"length","index":0,"message":{"role":"assistant","content":"hi"}}],"created":1764000000,"model":"served-name","system_fingerprint":"b0-unknown","object":"chat.completion","usage":{"completion_tokens":1,"prompt_tokens":12,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":0}},"id":"chatcmpl-Qx2","timings":{"cache_n":0,"prompt_n":12,"prompt_ms":1.2,"predicted_n":1,"predicted_ms":0.4}}',
} as const;
