// CPU time of the non-streamed chat answer's fast path (../../proxy/engine/frames/answer.ts
// completionFast) on the recorded vLLM answer (engine nulls where OpenAI's schema wants an
// object or array), on one without them, and on llama.cpp's (no `logprobs`, no `refusal`: put in
// as null), per call.
//   npx tsx bench/proxy/completion-fast.ts      (BENCH_ROUNDS=7 rounds of 200000 calls each)

import { completionFast } from '../../proxy/engine/frames/answer.ts';
import { modelFieldsOf } from '../../proxy/engine/frames/chunks.ts';
import { REAL_ANSWERS } from '../../proxy/engine/frames/real-frames.fixture.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const CALLS = 200_000;
const fields = modelFieldsOf('served-name', 'served-name');
const bodies = {
  'vLLM answer (engine nulls)': Buffer.from(REAL_ANSWERS.vllm),
  'answer without nulls': Buffer.from(
    REAL_ANSWERS.vllm
      .replace(',"annotations":null', '')
      .replace(',"function_call":null', '')
      .replace(',"prompt_tokens_details":null', ''),
  ),
  'llama.cpp answer (logprobs, refusal absent)': Buffer.from(REAL_ANSWERS.llamacpp),
};

for (const [name, body] of Object.entries(bodies)) {
  const perCall: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.cpuUsage();
    for (let i = 0; i < CALLS; i++)
      if (completionFast(body, fields) === undefined) throw new Error('not fast');
    const t = process.cpuUsage(t0);
    perCall.push(((t.user + t.system) * 1000) / CALLS);
  }
  perCall.sort((a, b) => a - b);
  console.log(`${name}: ${perCall[perCall.length >> 1]!.toFixed(0)} ns per call (median of ${ROUNDS})`);
}
