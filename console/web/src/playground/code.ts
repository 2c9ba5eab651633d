// "View code" (issue 19 item 3): the Playground's call exactly as sent — model, system prompt,
// messages, temperature, max tokens, streaming — as CURL, Python or TypeScript for the chosen
// dialect, runnable as shown with the key in MODELPLANE_API_KEY. Pure, so the test runs it.
import { type ChatRequest, chatBody, type Dialect, messagesBase } from './calls.ts';

export const CODE_LANGUAGES = ['CURL', 'Python', 'TypeScript'] as const;
export type CodeLanguage = (typeof CODE_LANGUAGES)[number];
export const KEY_VARIABLE = 'MODELPLANE_API_KEY';

const sh = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
const py = (v: unknown) =>
  JSON.stringify(v, null, 4)
    .replace(/\btrue\b/g, 'True')
    .replace(/\bfalse\b/g, 'False')
    .replace(/\bnull\b/g, 'None');

export function callCode(language: CodeLanguage, dialect: Dialect, apiBase: string, r: ChatRequest): string {
  const body = chatBody(r, dialect);
  const base = apiBase.replace(/\/$/, '');
  if (language === 'CURL') {
    const url = dialect === 'messages' ? `${messagesBase(base)}/v1/messages` : `${base}/chat/completions`;
    const auth =
      dialect === 'messages'
        ? `-H "x-api-key: $${KEY_VARIABLE}" \\\n  -H "anthropic-version: 2023-06-01"`
        : `-H "Authorization: Bearer $${KEY_VARIABLE}"`;
    return `curl -N ${url} \\\n  ${auth} \\\n  -H "Content-Type: application/json" \\\n  -d ${sh(JSON.stringify(body))}\n`;
  }
  const { stream: _s, stream_options: _o, ...args } = body as Record<string, unknown>;
  if (language === 'Python') {
    if (dialect === 'messages') {
      // The current Python SDK no longer takes `temperature` as an argument: it goes in the body.
      const { temperature, ...rest } = args;
      return `import os\nimport anthropic\n\nclient = anthropic.Anthropic(base_url=${JSON.stringify(messagesBase(base))}, api_key=os.environ["${KEY_VARIABLE}"])\nstream = client.messages.create(**${py(rest)}, extra_body={"temperature": ${py(temperature)}}, stream=True)\nfor event in stream:\n    if event.type == "content_block_delta" and event.delta.type == "text_delta":\n        print(event.delta.text, end="", flush=True)\nprint()\n`;
    }
    return `import os\nfrom openai import OpenAI\n\nclient = OpenAI(base_url=${JSON.stringify(base)}, api_key=os.environ["${KEY_VARIABLE}"])\nstream = client.chat.completions.create(**${py(args)}, stream=True, stream_options={"include_usage": True})\nfor chunk in stream:\n    if chunk.choices and chunk.choices[0].delta.content:\n        print(chunk.choices[0].delta.content, end="", flush=True)\nprint()\n`;
  }
  const ts = JSON.stringify(args, null, 2);
  if (dialect === 'messages')
    return `import Anthropic from '@anthropic-ai/sdk';\n\nconst client = new Anthropic({ baseURL: ${JSON.stringify(messagesBase(base))}, apiKey: process.env.${KEY_VARIABLE} });\nconst stream = client.messages.stream(${ts});\nstream.on('text', (text) => process.stdout.write(text));\nawait stream.finalMessage();\nprocess.stdout.write('\\n');\n`;
  return `import OpenAI from 'openai';\n\nconst client = new OpenAI({ baseURL: ${JSON.stringify(base)}, apiKey: process.env.${KEY_VARIABLE} });\nconst stream = await client.chat.completions.create({ ...${ts}, stream: true, stream_options: { include_usage: true } });\nfor await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? '');\nprocess.stdout.write('\\n');\n`;
}
