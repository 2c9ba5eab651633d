// The alert rules (charts/modelplane/files/prometheus-rules.yaml) checked and unit-tested by
// promtool from Debian's prometheus package (scripts/system-deps.sh prometheus): the syntax and
// templates are valid, and each alert fires on the series that mean trouble and stays quiet on a
// healthy platform (test/monitoring/alerts.promtool.yaml).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const run = promisify(execFile);
const rules = new URL('../../charts/modelplane/files/prometheus-rules.yaml', import.meta.url).pathname;
const unitTests = new URL('./alerts.promtool.yaml', import.meta.url).pathname;

describe('alert rules', () => {
  it('promtool check rules passes', async () => {
    const { stdout } = await run('promtool', ['check', 'rules', rules]);
    expect(stdout).toMatch(/SUCCESS: 1[0-9] rules found/);
  });

  it('promtool test rules passes: every alert fires on trouble and not on health', async () => {
    const { stdout } = await run('promtool', ['test', 'rules', unitTests]);
    expect(stdout).toContain('SUCCESS');
  });

  it('every alert has a unit test', () => {
    const groups = (parse(readFileSync(rules, 'utf8')) as { groups: { rules: { alert?: string }[] }[] })
      .groups;
    const alerts = groups.flatMap((g) => g.rules.map((r) => r.alert)).filter(Boolean);
    const tested = readFileSync(unitTests, 'utf8');
    for (const a of alerts) expect(tested, `${a} has no promtool test`).toContain(`alertname: ${a}\n`);
  });
});
