// A terminal for driving an interactive program as a person would (issue 30): tmux runs it on a
// private socket, keys are typed into the pane, and the screen is read back as text. Every server
// runs on its own socket, so stopping it ends only the programs this test started.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const TMUX = '/usr/bin/tmux';

export class Terminal {
  private constructor(private readonly socket: string) {}

  /** Starts `argv` in a 120×40 pane, with exactly `env` (nothing inherited), in `cwd`. */
  static async start(argv: string[], env: Record<string, string>, cwd: string): Promise<Terminal> {
    const socket = `mp-test-${process.pid}-${Date.now()}`;
    const command = ['env', '-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...argv];
    await run(TMUX, [
      '-L',
      socket,
      'new-session',
      '-d',
      '-s',
      'main',
      '-x',
      '120',
      '-y',
      '40',
      '-c',
      cwd,
      ...command,
    ]);
    // Keep the pane after the program exits, so its last screen can still be read.
    await run(TMUX, ['-L', socket, 'set-option', '-t', 'main', 'remain-on-exit', 'on']);
    return new Terminal(socket);
  }

  async screen(): Promise<string> {
    const { stdout } = await run(TMUX, ['-L', this.socket, 'capture-pane', '-p', '-t', 'main']);
    return stdout;
  }

  /** Named keys (`Enter`, `Up`, `Down`, `Escape`). */
  async keys(...names: string[]): Promise<void> {
    for (const name of names) {
      await run(TMUX, ['-L', this.socket, 'send-keys', '-t', 'main', name]);
      // A TUI redraws between keys; a key sent mid-redraw can land on the screen before.
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  /**
   * Moves a menu's pointer (❯) with `key` until it is on the line holding `option`, then Enter.
   * Each press is checked on the screen: on a loaded machine a key sent before the menu listens
   * is lost, and a blind Down+Enter then picks the default (seen in CI: "No, exit").
   */
  async choose(option: string, key: 'Up' | 'Down', timeoutMs = 30_000): Promise<void> {
    const onIt = (screen: string) => screen.split('\n').some((l) => l.includes('❯') && l.includes(option));
    const until = Date.now() + timeoutMs;
    while (!onIt(await this.screen())) {
      if (Date.now() > until)
        throw new Error(`the menu's pointer never reached "${option}" within ${timeoutMs} ms`);
      await this.keys(key);
      const redrawn = Date.now() + 2_000;
      while (Date.now() < redrawn && !onIt(await this.screen())) await new Promise((r) => setTimeout(r, 200));
    }
    await this.keys('Enter');
  }

  /** Text typed literally, then Enter. */
  async type(text: string): Promise<void> {
    await run(TMUX, ['-L', this.socket, 'send-keys', '-t', 'main', '-l', text]);
    await new Promise((r) => setTimeout(r, 300));
    await this.keys('Enter');
  }

  /** Waits until the screen matches; fails with the last screen. */
  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<string> {
    const until = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < until) {
      last = await this.screen();
      if (pattern.test(last)) return last;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`screen never matched ${pattern} within ${timeoutMs} ms; last screen:\n${last}`);
  }

  async stop(): Promise<void> {
    await run(TMUX, ['-L', this.socket, 'kill-server']).catch(() => {});
  }
}
