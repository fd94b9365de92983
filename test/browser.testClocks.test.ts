/**
 * The hosted pages of a checkout session and a payment link bound to a test clock, in a real browser (Debian's
 * Chromium driven by playwright-core; skipped, saying so, when `chromium` is not on PATH): open while the clock
 * stands still, expired and deactivated once it is advanced past their durations. The page may load nothing but
 * this service. Screenshots go to test-artifacts/test-clocks/ (git-ignored).
 */
import { expect } from 'chai';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { Database } from '../src/db/database.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';
import { until } from './support/until.ts';
import { installedChromium } from './support/chromium.ts';

const ARTIFACTS = path.join(import.meta.dirname, '..', 'test-artifacts', 'test-clocks');
const MINUTE_MS = 60 * 1000;


const executablePath = installedChromium();
const title = executablePath === null
  ? 'hosted pages on a test clock in headless Chromium — skipped: no `chromium` on PATH (Debian: apt-get install chromium; CI installs it)'
  : 'hosted pages on a test clock in headless Chromium, offline';

(executablePath === null ? describe.skip : describe)(title, function () {
  this.timeout(180_000);
  let database: Database;
  let service: TestService;
  let browser: Browser;
  let headers: Record<string, string>;
  let identityId: string;
  let accountNumber: string;

  const post = async (route: string, body?: unknown, extra: Record<string, string> = {}) => {
    const response = await service.request('POST', route, { headers: { ...headers, ...extra }, body });
    expect(response.status, `${route}: ${response.text}`).to.be.oneOf([200, 201]);
    return response.body as Record<string, any>;
  };
  const terms = (duration: number) => ({
    items: [{ description: 'Coffee 1 kg', preTaxAmount: '10000' }], currency: 'CLP', paymentMethodsAllowed: ['CARD'], duration,
    owner: { identityId },
    destinations: [{ type: 'ACCOUNT', amount: '10000', account: { type: 'CHECKING', currency: 'CLP', accountNumber, accountHolder: 'Shop' } }],
  });

  /** A page that may reach this service only; anything else is recorded and refused. */
  async function newPage(): Promise<{ page: Page; elsewhere: string[] }> {
    const page = await browser.newPage();
    const origin = new URL(service.baseUrl).origin;
    const elsewhere: string[] = [];
    await page.route('**/*', async (route) => {
      if (new URL(route.request().url()).origin === origin) return route.continue();
      elsewhere.push(route.request().url());
      return route.abort();
    });
    return { page, elsewhere };
  }

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    database = await databaseTargets()[0]!.open();
    service = await startTestService(database);
    headers = await service.as(await service.createClient('Shop'));
    identityId = (await post('/identities', { type: 'ORGANIZATION', name: 'Shop', country: 'CHL' })).id;
    accountNumber = (await post('/accounts', { identityId, type: 'CHECKING', currency: 'CLP' })).accountNumber;
    browser = await chromium.launch({ executablePath: executablePath!, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  });
  after(async () => {
    await browser?.close();
    await service?.close();
    await database?.close();
  });

  it('a session (1800 s) and a link (3600 s) on a clock show the expired and deactivated pages once it is advanced', async () => {
    const clock = await post('/test-clocks', { name: 'hosted pages' });
    const onClock = { 'Test-Clock': clock.id as string };
    const session = await post('/checkout-sessions', terms(1800), onClock);
    const link = await post('/payment-links', terms(3600), onClock);
    const { page, elsewhere } = await newPage();

    // The clock stands still: however long the real wait, both stay open.
    await page.goto(session.url);
    await page.getByRole('heading', { name: 'Checkout' }).waitFor();
    expect((await page.goto(link.url))?.status()).to.equal(200);
    await page.getByRole('button', { name: 'Continue to payment' }).waitFor();

    const advanced = await service.request('POST', `/test-clocks/${clock.id}/advance`, {
      headers, body: { frozenTime: new Date(Date.parse(clock.frozenTime) + 61 * MINUTE_MS).toISOString() } });
    expect(advanced.status, advanced.text).to.equal(200);
    await until(async () => (await service.request('GET', `/test-clocks/${clock.id}`, { headers })).body.status === 'ready', { what: 'clock ready' });

    await page.goto(session.url);
    await page.getByRole('heading', { name: 'This checkout has expired' }).waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'session-expired.png'), fullPage: true });
    expect((await service.request('GET', `/checkout-sessions/${session.id}`, { headers })).body.status).to.equal('EXPIRED');

    expect((await page.goto(link.url))?.status()).to.equal(410);
    await page.getByRole('heading', { name: 'This payment link is deactivated' }).waitFor();
    await page.screenshot({ path: path.join(ARTIFACTS, 'link-deactivated.png'), fullPage: true });
    expect(elsewhere).to.deep.equal([]);
    await page.close();
  });
});
