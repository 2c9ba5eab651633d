// Real editor tools as clients (issue 25, SPEC "Authentication" 8): OpenAI's Codex CLI (Responses
// API only) and Anthropic's Claude Code (Messages), installed from the npm registry by
// ./install-editor-tools.sh, run against the real proxy with the simulator behind, each with only
// its base address and an API key of this service changed: both non-interactively, and Claude
// Code's interactive interface in tmux (./tmux.ts). Each call is billed to that key.
//
// No ANTHROPIC_SMALL_FAST_MODEL / ANTHROPIC_DEFAULT_HAIKU_MODEL: Claude Code 2.1.328 sent every
// request under --model, with -p and interactively (seen on a capturing server: 6 and 10 requests,
// none under another name). Had it called a hard-coded haiku name, a Model alias would take it
// (docs/models.md#aliases; test/proxy/aliases.test.ts calls those names).
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../core/usage/usage.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { engineChatRequests } from '../proxy/engine-requests.ts';
import { type Harness, startHarness } from '../proxy/harness.ts';
import { Terminal } from './tmux.ts';

const MODEL = 'Org/Agent-Model';
/** The model Codex CLI 0.169 calls when its config names none (its banner says so). */
const CODEX_DEFAULT_MODEL = 'gpt-6.1-sol';

let h: Harness;
let bin: string;
beforeAll(async () => {
  bin = join(
    execFileSync(join(import.meta.dirname, 'install-editor-tools.sh'), { encoding: 'utf8' }).trim(),
    'node_modules',
    '.bin',
  );
  h = await startHarness(
    {},
    {
      entries: (endpoints) => [
        {
          id: MODEL,
          kind: 'chat',
          pricing: { USD: { input: '1', output: '2' } },
          capabilities: { tools: true },
          contextLength: 200_000,
          // Below the 32,000 Claude Code asks for: served at the limit (docs/api.md).
          maxOutputTokens: 8_192,
          // The platform's answer to a client's hard-coded name (docs/models.md#aliases).
          aliases: [CODEX_DEFAULT_MODEL],
          endpoints,
          created: 1_700_000_000,
        },
      ],
    },
  );
}, 300_000);
const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};
afterAll(async () => {
  await h?.stop();
  // Claude Code may still be writing into its home as tmux ends it (ENOTEMPTY seen in CI): retried.
  for (const d of dirs) rmSync(d, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
});

/** Runs a tool to its end with stdin closed (both read a prompt from stdin while it is open). */
function run(
  cmd: string,
  args: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      env: { PATH: process.env.PATH ?? '', ...env },
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 150_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const engineRequestsDuring = <T>(go: () => Promise<T>) => engineChatRequests(h, go);

/** One charge per engine call, each to the tool's key; the ledger balances. */
async function expectEachCallBilled(a: { accountId: string; keyId: string }, calls: number): Promise<void> {
  await h.settled(a.accountId);
  const charges = (await usageRecords(h.redis.client(), a.accountId, { count: 200 })).filter(
    (r) => r.type === 'charge',
  );
  expect(charges.length).toBe(calls);
  for (const c of charges) expect(c).toMatchObject({ keyId: a.keyId, model: MODEL });
  await expectLedgerClean(h.redis.client(), [a.accountId]);
}

describe('editor tools through the proxy', () => {
  /** Codex's config: the provider (base URL, key variable, wire API), and `extra` lines before it. */
  const codexConfig = (home: string, extra: string[]) =>
    writeFileSync(
      join(home, 'config.toml'),
      [
        ...extra,
        'model_provider = "modelplane"',
        '[model_providers.modelplane]',
        'name = "modelplane"',
        `base_url = "${h.baseURL}"`,
        'env_key = "MODELPLANE_API_KEY"',
        'wire_api = "responses"',
        '',
      ].join('\n'),
    );
  const codex = (home: string, work: string, secret: string, prompt: string) =>
    engineRequestsDuring(() =>
      run(
        join(bin, 'codex'),
        ['exec', '--skip-git-repo-check', '--sandbox', 'read-only', prompt],
        { CODEX_HOME: home, HOME: home, MODELPLANE_API_KEY: secret },
        work,
      ),
    );

  it('Codex CLI with a config holding the provider (base URL, key variable, wire API) and the model completes a turn with a tool call; its hosted web_search left out; every call billed to its key', async () => {
    const a = await h.newAccount();
    const home = tempDir('codex-home-');
    const work = tempDir('codex-work-');
    // Named, a model other than OpenAI's gets Codex's function tools (exec_command) as top-level tools.
    codexConfig(home, [`model = "${MODEL}"`]);
    const { out, sent } = await codex(home, work, a.secret, 'Use exec_command to list the files here.');
    const transcript = `exit ${out.code}\nstdout:\n${out.stdout}\nstderr:\n${out.stderr}`;
    expect(out.code, transcript).toBe(0);
    // A turn with one tool call: the model called a tool, got its output, then answered.
    expect(sent.length, transcript).toBeGreaterThanOrEqual(2);
    const last = sent.at(-1)!.messages as { role: string }[];
    expect(
      last.some((m) => m.role === 'tool'),
      transcript,
    ).toBe(true);
    // Codex offered its hosted web_search (no line of the config says otherwise): left out.
    for (const b of sent)
      expect(((b.tools ?? []) as { type: string }[]).filter((t) => t.type !== 'function')).toEqual([]);
    await expectEachCallBilled(a, sent.length);
  }, 300_000);

  it('Codex CLI with a config holding only the provider (no model line) calls its default model, an alias here, and completes a turn through its custom `exec` tool (additional_tools, namespace, custom_tool_call); every call billed to its key', async () => {
    const a = await h.newAccount();
    const home = tempDir('codex-default-home-');
    const work = tempDir('codex-default-work-');
    writeFileSync(join(work, 'notes.txt'), 'hello\n');
    codexConfig(home, []);
    // Its default model gets one tool: `exec` in the namespace `functions`, a custom tool taking
    // JavaScript that calls Codex's other tools. The simulator calls the tool a prompt names
    // (`functions__exec`, the engine's name for it) with the arguments it spells.
    const script = "const r = await tools.exec_command({cmd: 'ls'}); text(r);";
    const { out, sent } = await codex(home, work, a.secret, `Use functions__exec with input="${script}"`);
    const transcript = `exit ${out.code}\nstdout:\n${out.stdout}\nstderr:\n${out.stderr}`;
    expect(out.code, transcript).toBe(0);
    expect(out.stdout + out.stderr, transcript).toContain(`model: ${CODEX_DEFAULT_MODEL}`);
    expect(sent.length, transcript).toBeGreaterThanOrEqual(2);
    // Offered as a function of one string, called with the script, and its output (ls run by
    // Codex in its sandbox) sent back as the tool's result.
    const exec = (sent[0]!.tools as { function?: { name: string; parameters: unknown } }[]).find(
      (t) => t.function?.name === 'functions__exec',
    );
    expect(exec?.function?.parameters, transcript).toMatchObject({ required: ['input'] });
    const last = sent.at(-1)!.messages as {
      role: string;
      content?: unknown;
      tool_calls?: { function: { name: string; arguments: string } }[];
    }[];
    const call = last.flatMap((m) => m.tool_calls ?? []).at(-1);
    expect(call?.function.name, transcript).toBe('functions__exec');
    expect(JSON.parse(call!.function.arguments), transcript).toEqual({ input: script });
    expect(
      last.some((m) => m.role === 'tool' && JSON.stringify(m.content).includes('notes.txt')),
      transcript,
    ).toBe(true);
    await expectEachCallBilled(a, sent.length);
  }, 300_000);

  it('Claude Code (claude -p, ANTHROPIC_BASE_URL, the key and --model) on a model whose output limit is 8,192 completes a turn with a tool call; billed to its key', async () => {
    const a = await h.newAccount();
    const home = tempDir('claude-home-');
    const work = tempDir('claude-work-');
    writeFileSync(join(work, 'notes.txt'), 'hello\n');
    mkdirSync(join(home, '.claude'), { recursive: true });
    const { out, sent } = await engineRequestsDuring(() =>
      run(
        join(bin, 'claude'),
        ['-p', 'Use Read to read notes.txt in this folder.', '--model', MODEL],
        {
          HOME: home,
          ANTHROPIC_BASE_URL: h.baseURL.replace(/\/v1$/, ''),
          ANTHROPIC_API_KEY: a.secret,
        },
        work,
      ),
    );
    const transcript = `exit ${out.code}\nstdout:\n${out.stdout}\nstderr:\n${out.stderr}`;
    expect(out.code, transcript).toBe(0);
    expect(out.stdout.trim().length, transcript).toBeGreaterThan(0);
    // It asks for 32,000 output tokens; the engines were asked for at most the model's 8,192.
    const bounds = sent.map((b) => b.max_tokens as number);
    expect(Math.max(...bounds), transcript).toBe(8_192);
    // A turn with a tool call: the model called Read, Claude Code ran it, and sent the result back.
    expect(sent.length, transcript).toBeGreaterThanOrEqual(2);
    expect(
      sent.some((b) => (b.messages as { role: string }[]).some((m) => m.role === 'tool')),
      transcript,
    ).toBe(true);
    await expectEachCallBilled(a, sent.length);
  }, 300_000);

  it('Claude Code interactive (in tmux: typed input, the screen read back) reads then edits a file in its folder; billed to its key', async () => {
    const a = await h.newAccount();
    const home = tempDir('claude-tui-home-');
    const work = tempDir('claude-tui-work-');
    const notes = join(work, 'notes.txt');
    writeFileSync(notes, 'hello\n');
    // The one file beyond the three settings: first-run onboarding checks api.anthropic.com, which
    // this machine cannot reach (the screen says "Unable to connect to Anthropic services"); a user
    // who has run Claude Code once has this flag already.
    writeFileSync(join(home, '.claude.json'), JSON.stringify({ hasCompletedOnboarding: true }));
    let term: Terminal | undefined;
    const { out, sent } = await engineRequestsDuring(async () => {
      term = await Terminal.start(
        [join(bin, 'claude'), '--model', MODEL],
        {
          PATH: process.env.PATH ?? '',
          HOME: home,
          TERM: 'xterm-256color',
          ANTHROPIC_BASE_URL: h.baseURL.replace(/\/v1$/, ''),
          ANTHROPIC_API_KEY: a.secret,
          // It would otherwise install a newer version from the npm registry mid-test.
          DISABLE_AUTOUPDATER: '1',
        },
        work,
      );
      try {
        await term.waitFor(/trust this folder/);
        await term.choose('Yes, I trust this folder', 'Down');
        await term.waitFor(/Do you want to use this API key\?/);
        await term.choose('Yes', 'Up'); // the default is "No (recommended)"
        await term.waitFor(/auto mode|❯/);
        // Claude Code edits only a file it has read this session: Read first, then Edit.
        await term.type(`Use Read with file_path="${notes}"`);
        await term.waitFor(/Read 1 file/);
        await term.type(`Use Edit with file_path="${notes}" old_string="hello" new_string="goodbye"`);
        const until = Date.now() + 60_000;
        while (readFileSync(notes, 'utf8') !== 'goodbye\n' && Date.now() < until)
          await new Promise((r) => setTimeout(r, 250));
        // The screen shows the edit it made.
        return await term.waitFor(/Update\(|Edit\(/);
      } catch (err) {
        throw new Error(`${(err as Error).message}\nscreen:\n${await term.screen()}`);
      } finally {
        await term.stop();
      }
    });
    expect(readFileSync(notes, 'utf8'), out).toBe('goodbye\n');
    expect(
      sent.some((b) => (b.messages as { role: string }[]).some((m) => m.role === 'tool')),
      out,
    ).toBe(true);
    await expectEachCallBilled(a, sent.length);
  }, 300_000);
});
