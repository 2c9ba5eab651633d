// The Playground's images and videos as people look at them (issue 37 item 5), in Debian's Chromium
// through playwright-core against the platform started as `make dev` starts it, with the example
// models: a 1024×1024 image drawn at 1024 CSS pixels where the page has the room and at the page's
// width on a phone; a lightbox (Esc, arrows, focus back); quality, style and seed sent as chosen;
// earlier images kept across another call and a reload, one history per account; a 1280×720 video
// played at the job's size (the simulator encodes 160 pixels wide: the player must not shrink to
// that); earlier videos listed with their prompt, date, model, length, size and status. Every call
// is charged once: the ledger is checked at the end. Screenshots go to test/out/.
import { mkdirSync } from 'node:fs';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BrowserPlatform,
  DESKTOP,
  exampleModels,
  newOwner,
  PHONE,
  shoot,
  signIn,
  startBrowserPlatform,
} from '../helpers/browser.ts';
import { ensureConsoleWeb } from '../helpers/console-web.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';

const repo = new URL('../../', import.meta.url).pathname;
const out = `${repo}test/out/`;
const POLL = { timeout: 20_000 };

let started: BrowserPlatform;
let models: ReturnType<typeof exampleModels>;
const consoleErrors: string[] = [];

beforeAll(async () => {
  await ensureConsoleWeb();
  models = exampleModels('mp-playground-media-');
  const { dataDir, modelsDir } = models;
  started = await startBrowserPlatform({ dataDir, modelsDir, env: { VIDEO_POLL_MS: '100' }, log: () => {} });
  mkdirSync(out, { recursive: true });
}, 300_000);

afterAll(async () => {
  await started?.stop();
  models?.remove();
}, 60_000);

/** The element's drawn box and its parent's content width. */
const drawn = (page: Page, testId: string, nth = 0) =>
  page
    .getByTestId(testId)
    .nth(nth)
    .evaluate((e) => {
      const r = e.getBoundingClientRect();
      const host = e.closest('section') as HTMLElement;
      const style = getComputedStyle(host);
      const room =
        host.clientWidth - Number.parseFloat(style.paddingLeft) - Number.parseFloat(style.paddingRight);
      const natural = e as HTMLImageElement & HTMLVideoElement;
      return {
        width: r.width,
        height: r.height,
        left: r.left,
        right: r.right,
        room,
        naturalWidth: natural.naturalWidth ?? natural.videoWidth,
        videoWidth: natural.videoWidth,
      };
    });

describe('Playground media (issue 37 item 5)', () => {
  let context: BrowserContext;
  let page: Page;
  let owner: Awaited<ReturnType<typeof newOwner>>;

  beforeAll(async () => {
    context = await started.browser.newContext({ viewport: DESKTOP });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(`${page.url()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => consoleErrors.push(`${page.url()}: ${e.message}`));
    owner = await newOwner(started.redis, 'Media Co');
    await signIn(page, started.platform.consoleUrl, owner.email, '/playground?tab=images');
    await page.getByRole('heading', { name: 'Images', level: 2 }).waitFor(POLL);
  }, 60_000);
  afterAll(async () => context?.close());

  it('an image is drawn at its own size (1024 px at 1440×900, the page’s width at 390×844); quality, style and seed are sent as chosen', async () => {
    await page.getByLabel('Size').selectOption('1024x1024');
    await page.getByLabel('Quality').selectOption('high');
    await page.getByLabel('Style').selectOption('natural');
    await page.getByLabel(/^Seed/).fill('42');
    await page.getByLabel('Image prompt').fill('A lighthouse at dusk');
    const sent = page.waitForRequest(
      (r) => r.url().endsWith('/v1/images/generations') && r.method() === 'POST',
    );
    await page.getByRole('button', { name: 'Generate', exact: true }).click();
    const body = JSON.parse((await sent).postData() ?? '{}') as Record<string, unknown>;
    expect(body).toMatchObject({ size: '1024x1024', quality: 'high', style: 'natural', seed: 42, n: 1 });
    await page.getByTestId('result-image').waitFor(POLL);
    await expect.poll(async () => (await drawn(page, 'result-image')).naturalWidth, POLL).toBe(1024);
    const desktop = await drawn(page, 'result-image');
    expect(desktop.room).toBeGreaterThanOrEqual(1024); // the page has the room at 1440 px…
    expect(desktop.width).toBe(1024); // …so the image is drawn at its own size, not ~256 px
    expect(desktop.height).toBe(1024);
    await page.getByTestId('media-cost').waitFor(POLL);
    await shoot(page, `${out}playground-image-natural`);

    await page.setViewportSize(PHONE);
    await page.waitForTimeout(50);
    const phone = await drawn(page, 'result-image');
    expect(Math.abs(phone.width - phone.room)).toBeLessThanOrEqual(1); // the page's width, no wider
    expect(Math.abs(phone.height - phone.width)).toBeLessThanOrEqual(1); // still square
    expect(phone.left).toBeGreaterThanOrEqual(0);
    expect(phone.right).toBeLessThanOrEqual(PHONE.width);
    await page.setViewportSize(DESKTOP);
  }, 90_000);

  it('a lightbox opens an image over the page within the window: arrows move between images, Esc closes, focus returns', async () => {
    // A second call of two images: the first call's image moves to "Earlier images".
    await page.getByLabel('Images (n)').fill('2');
    await page.getByLabel('Image prompt').fill('Two red foxes');
    await page.getByRole('button', { name: 'Generate', exact: true }).click();
    await expect.poll(() => page.getByTestId('result-image').count(), POLL).toBe(2);
    await expect.poll(() => page.getByTestId('earlier-image').count(), POLL).toBe(1);
    expect(await page.getByTestId('earlier-image').textContent()).toContain('A lighthouse at dusk');

    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      const opener = page.getByRole('button', { name: 'Open image 1 at full size' });
      await opener.click();
      const dialog = page.getByRole('dialog', { name: 'Image 1 of 2' });
      await dialog.waitFor(POLL);
      const box = await page.getByTestId('lightbox-image').evaluate((e) => {
        const r = e.getBoundingClientRect();
        const img = e as HTMLImageElement;
        return { ...r.toJSON(), natural: img.naturalWidth, innerWidth, innerHeight };
      });
      // Inside the window, square, and either at its own size or as large as the window lets it be.
      expect(box.left).toBeGreaterThanOrEqual(0);
      expect(box.right).toBeLessThanOrEqual(box.innerWidth);
      expect(box.bottom).toBeLessThanOrEqual(box.innerHeight);
      expect(Math.abs(box.width - box.height)).toBeLessThanOrEqual(1);
      const fitted = box.width >= 0.8 * box.innerWidth || box.height >= 0.6 * box.innerHeight;
      expect(box.width === box.natural || fitted).toBe(true);
      if (viewport === PHONE) expect(box.width).toBeGreaterThan(300); // not a thumbnail on a phone
      if (viewport === DESKTOP) await shoot(page, `${out}playground-image-lightbox`);
      await page.keyboard.press('ArrowRight');
      await page.getByRole('dialog', { name: 'Image 2 of 2' }).waitFor(POLL);
      expect(await page.getByRole('button', { name: 'Next' }).isDisabled()).toBe(true);
      await page.keyboard.press('ArrowLeft');
      await page.getByRole('dialog', { name: 'Image 1 of 2' }).waitFor(POLL);
      await page.keyboard.press('Escape');
      await expect.poll(() => page.getByRole('dialog').count(), POLL).toBe(0);
      expect(await opener.evaluate((e) => e === document.activeElement)).toBe(true);
    }
    await page.setViewportSize(DESKTOP);
    // An earlier image opens in the lightbox too, at its own size (a thumbnail in the list).
    await page.getByRole('button', { name: 'Open earlier image 1 at full size' }).click();
    await page.getByRole('dialog', { name: 'Image 1 of 1' }).waitFor(POLL);
    expect(await page.getByRole('dialog').textContent()).toContain('quality high · style natural · seed 42');
    await page.getByRole('button', { name: 'Close' }).click();
  }, 120_000);

  it('earlier images are kept across a reload, one history per account; one can be removed', async () => {
    await page.reload();
    await page.getByRole('heading', { name: 'Images', level: 2 }).waitFor(POLL);
    // After a reload no call is on the page: all three images are earlier ones, newest first.
    await expect.poll(() => page.getByTestId('earlier-image').count(), POLL).toBe(3);
    const texts = await page.getByTestId('earlier-image').allTextContents();
    expect(texts[2]).toContain('A lighthouse at dusk');
    expect(texts[0]).toContain('Two red foxes');
    await page.getByRole('button', { name: 'Remove earlier image 3' }).click();
    await expect.poll(() => page.getByTestId('earlier-image').count(), POLL).toBe(2);
    await page.reload();
    await expect.poll(() => page.getByTestId('earlier-image').count(), POLL).toBe(2);
    expect((await page.getByTestId('earlier-image').allTextContents()).join()).not.toContain('lighthouse');

    // Another account signed in in the same browser sees none of them.
    const other = await newOwner(started.redis, 'Other Media Co');
    const otherPage = await (await started.browser.newContext({ viewport: DESKTOP })).newPage();
    await signIn(otherPage, started.platform.consoleUrl, other.email, '/playground?tab=images');
    await otherPage.getByText('None yet').waitFor(POLL);
    await otherPage.context().close();
  }, 90_000);

  it('a 1280×720 video plays at the job’s size (not the 160 px the engine encoded); earlier videos show their prompt, date, model, length, size and status', async () => {
    await page.getByRole('tab', { name: 'Videos' }).click();
    await page.getByLabel('Size').selectOption('1280x720');
    await page.getByLabel('Video prompt').fill('A paper boat drifting');
    await page.getByRole('button', { name: 'Generate video' }).click();
    const video = page.getByTestId('video');
    await video.waitFor({ timeout: 60_000 });
    await expect
      .poll(() => video.evaluate((v) => (v as HTMLVideoElement).readyState), { timeout: 30_000 })
      .toBeGreaterThanOrEqual(2);
    const desktop = await drawn(page, 'video');
    expect(desktop.videoWidth).toBeLessThan(desktop.width); // the encoded picture is scaled up…
    expect(desktop.width).toBe(Math.min(1280, desktop.room)); // …to the job's size, within the page
    expect(Math.abs(desktop.height - (desktop.width * 720) / 1280)).toBeLessThanOrEqual(1);

    const earlier = page.getByTestId('earlier-video').first();
    await expect.poll(() => earlier.getByTestId('earlier-status').textContent(), POLL).toBe('Completed');
    const line = (await earlier.textContent()) ?? '';
    for (const part of ['A paper boat drifting', 'Wan-AI/Wan2.2-I2V-A14B', '4 s', '1280x720'])
      expect(line).toContain(part);
    await shoot(page, `${out}playground-video-natural`);

    await page.setViewportSize(PHONE);
    await page.waitForTimeout(50);
    const phone = await drawn(page, 'video');
    expect(Math.abs(phone.width - phone.room)).toBeLessThanOrEqual(1);
    expect(phone.right).toBeLessThanOrEqual(PHONE.width);
    await page.setViewportSize(DESKTOP);

    // The prompt is this browser's: still there after a reload; Play loads the job at its size.
    await page.reload();
    const again = page.getByTestId('earlier-video').first();
    await expect.poll(() => again.textContent(), POLL).toContain('A paper boat drifting');
    await again.getByRole('button', { name: /^Play/ }).click();
    await video.waitFor(POLL);
    expect((await drawn(page, 'video')).width).toBe(desktop.width);
  }, 150_000);

  it('every call charged once; no page wrote an error to the browser console', async () => {
    await expectLedgerClean(started.redis, [owner.accountId]);
    expect(consoleErrors).toEqual([]);
  }, 60_000);
});
