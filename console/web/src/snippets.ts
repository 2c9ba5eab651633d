// Sample API Implementation (SPEC "What the service does" 7, CON-4): Python, CURL and TypeScript
// for each task, pre-filled with the endpoint and the chosen model. Pure, so the page, its tests
// and the test that runs every snippet against the platform share one source. The key is read from
// the environment (MODELPLANE_API_KEY) and files from the working folder (input.png), so a snippet
// runs as shown.

export const TASKS = [
  'Text Generation',
  'Image Generation',
  'Image Edit',
  'Video Generation',
  'Image to Video',
] as const;
export type Task = (typeof TASKS)[number];
export const LANGUAGES = ['Python', 'CURL', 'TypeScript'] as const;
export type Language = (typeof LANGUAGES)[number];

/** What a model must be to serve a task (from the pricing table's kind and capabilities). */
export interface ModelInfo {
  id: string;
  kind: string;
  /** The account can call it now (available, or invite-only and granted). */
  callable: boolean;
  capabilities: { edit: boolean; imageToVideo: boolean };
}

export function modelsFor(task: Task, models: readonly ModelInfo[]): ModelInfo[] {
  const callable = models.filter((m) => m.callable);
  switch (task) {
    case 'Text Generation':
      return callable.filter((m) => m.kind === 'chat');
    case 'Image Generation':
      return callable.filter((m) => m.kind === 'image');
    case 'Image Edit':
      return callable.filter((m) => m.kind === 'image' && m.capabilities.edit);
    case 'Video Generation':
      return callable.filter((m) => m.kind === 'video');
    case 'Image to Video':
      return callable.filter((m) => m.kind === 'video' && m.capabilities.imageToVideo);
  }
}

export const KEY_VARIABLE = 'MODELPLANE_API_KEY';
/** The image file the edit and image-to-video snippets upload. */
export const INPUT_IMAGE = 'input.png';

const PROMPTS: Record<Task, string> = {
  'Text Generation': 'Write a haiku about the sea.',
  'Image Generation': 'A lighthouse at dusk, watercolor',
  'Image Edit': 'Make it night, with stars',
  'Video Generation': 'A paper boat drifting down a river',
  'Image to Video': 'The scene slowly comes to life',
};

/** A string as a POSIX shell single-quoted word. */
const sh = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
/** A string as a Python or TypeScript string literal (JSON's escaping is valid in both). */
const lit = (s: string) => JSON.stringify(s);
const tsLit = (s: string) =>
  `'${JSON.stringify(s).slice(1, -1).replaceAll("'", "\\'").replaceAll('\\"', '"')}'`;

export function snippet(task: Task, language: Language, base: string, model: string): string {
  const prompt = PROMPTS[task];
  const b = base.replace(/\/$/, '');
  switch (language) {
    case 'CURL':
      return curl(task, b, model, prompt);
    case 'Python':
      return python(task, b, model, prompt);
    case 'TypeScript':
      return typescript(task, b, model, prompt);
  }
}

function curl(task: Task, b: string, model: string, prompt: string): string {
  const auth = `-H "Authorization: Bearer $${KEY_VARIABLE}"`;
  const json = (path: string, body: object) =>
    `curl ${b}${path} \\\n  ${auth} \\\n  -H "Content-Type: application/json" \\\n  -d ${sh(JSON.stringify(body))}`;
  switch (task) {
    case 'Text Generation':
      return json('/chat/completions', { model, messages: [{ role: 'user', content: prompt }] });
    case 'Image Generation':
      return json('/images/generations', { model, prompt, n: 1, size: '1024x1024' });
    case 'Image Edit':
      return `curl ${b}/images/edits \\\n  ${auth} \\\n  -F model=${sh(model)} \\\n  -F prompt=${sh(prompt)} \\\n  -F image=@${INPUT_IMAGE}`;
    case 'Video Generation':
      return `${json('/videos', { model, prompt, seconds: '4' })}\n# then poll GET ${b}/videos/{id} until "completed", and download GET ${b}/videos/{id}/content`;
    case 'Image to Video':
      return `curl ${b}/videos \\\n  ${auth} \\\n  -F model=${sh(model)} \\\n  -F prompt=${sh(prompt)} \\\n  -F seconds=4 \\\n  -F input_reference=@${INPUT_IMAGE}\n# then poll GET ${b}/videos/{id} until "completed", and download GET ${b}/videos/{id}/content`;
  }
}

function python(task: Task, b: string, model: string, prompt: string): string {
  const head = `import os\nfrom openai import OpenAI\n\nclient = OpenAI(base_url=${lit(b)}, api_key=os.environ[${lit(KEY_VARIABLE)}])\n`;
  switch (task) {
    case 'Text Generation':
      return `${head}reply = client.chat.completions.create(\n    model=${lit(model)},\n    messages=[{"role": "user", "content": ${lit(prompt)}}],\n)\nprint(reply.choices[0].message.content)\n`;
    case 'Image Generation':
      return `${head}image = client.images.generate(model=${lit(model)}, prompt=${lit(prompt)}, n=1, size="1024x1024")\nprint(image.data[0].url)\n`;
    case 'Image Edit':
      return `${head}with open(${lit(INPUT_IMAGE)}, "rb") as f:\n    image = client.images.edit(model=${lit(model)}, image=f, prompt=${lit(prompt)})\nprint(image.data[0].url)\n`;
    case 'Video Generation':
      return `${head}video = client.videos.create_and_poll(model=${lit(model)}, prompt=${lit(prompt)}, seconds="4")\nprint(video.status)\nif video.status == "completed":\n    client.videos.download_content(video.id).write_to_file("video.mp4")\n`;
    case 'Image to Video':
      return `${head}with open(${lit(INPUT_IMAGE)}, "rb") as f:\n    video = client.videos.create_and_poll(\n        model=${lit(model)}, prompt=${lit(prompt)}, seconds="4", input_reference=f\n    )\nprint(video.status)\nif video.status == "completed":\n    client.videos.download_content(video.id).write_to_file("video.mp4")\n`;
  }
}

function typescript(task: Task, b: string, model: string, prompt: string): string {
  const head = `import OpenAI from 'openai';\n\nconst client = new OpenAI({ baseURL: ${tsLit(b)}, apiKey: process.env.${KEY_VARIABLE} });\n`;
  const poll = `\nwhile (video.status === 'queued' || video.status === 'in_progress') {\n  await new Promise((r) => setTimeout(r, 2000));\n  video = await client.videos.retrieve(video.id);\n}\nconsole.log(video.status);\nif (video.status === 'completed') {\n  const mp4 = await client.videos.downloadContent(video.id);\n  await writeFile('video.mp4', Buffer.from(await mp4.arrayBuffer()));\n}\n`;
  switch (task) {
    case 'Text Generation':
      return `${head}const reply = await client.chat.completions.create({\n  model: ${tsLit(model)},\n  messages: [{ role: 'user', content: ${tsLit(prompt)} }],\n});\nconsole.log(reply.choices[0]?.message.content);\n`;
    case 'Image Generation':
      return `${head}const image = await client.images.generate({ model: ${tsLit(model)}, prompt: ${tsLit(prompt)}, n: 1, size: '1024x1024' });\nconsole.log(image.data?.[0]?.url);\n`;
    case 'Image Edit':
      return `import fs from 'node:fs';\n${head}const image = await client.images.edit({\n  model: ${tsLit(model)},\n  image: fs.createReadStream(${tsLit(INPUT_IMAGE)}),\n  prompt: ${tsLit(prompt)},\n});\nconsole.log(image.data?.[0]?.url);\n`;
    case 'Video Generation':
      return `import { writeFile } from 'node:fs/promises';\n${head}let video = await client.videos.create({ model: ${tsLit(model)}, prompt: ${tsLit(prompt)}, seconds: '4' });${poll}`;
    case 'Image to Video':
      return `import fs from 'node:fs';\nimport { writeFile } from 'node:fs/promises';\n${head}let video = await client.videos.create({\n  model: ${tsLit(model)},\n  prompt: ${tsLit(prompt)},\n  seconds: '4',\n  input_reference: fs.createReadStream(${tsLit(INPUT_IMAGE)}),\n});${poll}`;
  }
}
