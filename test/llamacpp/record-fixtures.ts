// Records llama.cpp's answers as engine fixtures (test/engines/fixtures/llamacpp-py<version>/):
// starts llama-server as the engine suite does (./server.ts: the operator's flags, the tiny
// model), one slot with a small context so the "too long" cases stay small, and runs the
// recorder (../engines/fixtures/record.ts) against it.
//
// usage: npx tsx test/llamacpp/record-fixtures.ts [--max-model-len 1024] [--out DIR]
import { parseArgs } from 'node:util';
import { recordFixtures } from '../engines/fixtures/record.ts';
import { startLlamaServer } from './server.ts';

const { values } = parseArgs({
  options: {
    'max-model-len': { type: 'string', default: '1024' },
    out: { type: 'string', default: 'test/engines/fixtures/llamacpp-py0.3.36' },
  },
});
const maxModelLen = Number(values['max-model-len']);
const model = 'org/chat-model';
const server = await startLlamaServer({ servedName: model, parallel: 1, contextLength: maxModelLen });
// The flags without the per-run values (port, model file path).
const varying = ['--port', '-m'];
const flags = server.args.filter((a, i) => !varying.includes(a) && !varying.includes(server.args[i - 1]!));
try {
  await recordFixtures({
    url: server.url,
    model,
    maxModelLen,
    out: values.out,
    engine:
      'llama.cpp server 0.5.0-dev (vendored by llama-cpp-python 0.3.36), CPU, tiny random-weight GGUF of test/llamacpp/tiny-model.sh',
    flags: flags.join(' '),
  });
} finally {
  await server.stop();
}
