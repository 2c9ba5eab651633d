// Time to first token of a Playground run in Chromium against the same call through the `openai`
// SDK in Node, in the same run, alternating (issue 19 "Done means"): the Playground must add no
// more than one frame of rendering. The platform is started as `make dev` starts it (free ports, a
// folder of its own); the browser signs in as the demo user and runs the prompt in the Run tab.
// The browser's figure is from the Run click to the first frame painted after the first text
// reached the page (a MutationObserver, then requestAnimationFrame); the SDK's from the call to
// its first content chunk.
//   npx tsx bench/playground/ttft.ts          (part of `make bench`; ~1 min)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { chromium } from 'playwright-core';
import { build } from 'vite';
import { startPlatform } from '../../cli/platform.ts';
import { freePort } from '../../core/free-port.ts';

const RUNS = Number(process.env.RUNS ?? 20);
const MODEL = 'Meta-Llama/Llama-3.1-8B-Instruct';
const PROMPT = 'Name a colour';
const FRAME_MS = 1000 / 60;

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

async function main() {
  const repo = new URL('../../', import.meta.url).pathname;
  await build({ configFile: `${repo}console/web/vite.config.ts`, logLevel: 'error' });
  const dataDir = mkdtempSync(join(tmpdir(), 'mp-bench-playground-'));
  const platform = await startPlatform({
    dataDir,
    modelsDir: `${repo}examples/models`,
    redisPort: await freePort(),
    proxyPort: await freePort(),
    consolePort: await freePort(),
    operatorPort: await freePort(),
    log: () => {},
  });
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`${platform.consoleUrl}/playground?tab=run`);
    await page.getByLabel('Email').fill(platform.demo.email);
    await page.getByLabel('Password').fill(platform.demo.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Run a prompt' }).waitFor();
    await page.getByLabel('Model').selectOption(MODEL);
    await page.getByLabel('Max tokens').fill('8');
    await page.locator('section.run button.primary:not([disabled])').waitFor(); // the key's secret is read
    const client = new OpenAI({ apiKey: platform.demo.secret, baseURL: platform.apiBase, maxRetries: 0 });

    const browserRun = async () => {
      await page
        .getByRole('button', { name: 'New conversation' })
        .click({ timeout: 100 })
        .catch(() => {});
      await page.getByLabel(/^Message/).fill(PROMPT);
      const ms = await page.evaluate(
        () =>
          new Promise<number>((resolve) => {
            const reply = document.querySelector('[data-testid="reply"]')!;
            // The Run section's button (the tab is named Run too).
            const run = document.querySelector<HTMLButtonElement>('section.run button.primary')!;
            setTimeout(() => resolve(Number.NaN), 20_000);
            let t0 = 0;
            const seen = new MutationObserver(() => {
              if ((reply.textContent ?? '') === '' || t0 === 0) return;
              seen.disconnect();
              requestAnimationFrame(() => resolve(performance.now() - t0));
            });
            seen.observe(reply, { childList: true, characterData: true, subtree: true });
            t0 = performance.now();
            run.click();
          }),
      );
      await page.locator('section.run button.primary', { hasText: 'Run' }).waitFor({ timeout: 20_000 });
      if (Number.isNaN(ms)) throw new Error('the Playground showed no reply within 20 s');
      return ms;
    };
    const sdkRun = async () => {
      const t0 = performance.now();
      const stream = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: PROMPT }],
        max_tokens: 8,
        stream: true,
      });
      let ms = 0;
      for await (const chunk of stream)
        if (ms === 0 && chunk.choices[0]?.delta?.content) ms = performance.now() - t0;
      return ms;
    };

    for (let i = 0; i < 3; i++) {
      await browserRun(); // warm-up: the CORS preflight is cached after the first call
      await sdkRun();
    }
    const inBrowser: number[] = [];
    const inSdk: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      inBrowser.push(await browserRun());
      inSdk.push(await sdkRun());
    }
    const row = (name: string, xs: number[]) =>
      `| ${name.padEnd(36)} | ${quantile(xs, 0.5).toFixed(1).padStart(7)} | ${quantile(xs, 0.9).toFixed(1).padStart(7)} |`;
    console.log(`Time to first token, ${RUNS} runs each, alternating; ${MODEL} (simulator, 20 ms TTFT)\n`);
    console.log('| client                               |  p50 ms |  p90 ms |');
    console.log('| ------------------------------------ | ------: | ------: |');
    console.log(row('openai SDK (Node), first chunk', inSdk));
    console.log(row('Playground (Chromium), first frame', inBrowser));
    const added = quantile(inBrowser, 0.5) - quantile(inSdk, 0.5);
    console.log(
      `\nThe Playground adds ${added.toFixed(1)} ms at the median: ${added <= FRAME_MS ? 'within' : 'MORE than'} one frame (${FRAME_MS.toFixed(1)} ms).`,
    );
  } finally {
    await browser.close();
    await platform.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

void main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
