/**
 * The hosted checkout pages in a real browser: Debian's Chromium driven by playwright-core (no browser is
 * downloaded; the suite is skipped, saying so, when `chromium` is not on PATH). The page may load nothing but
 * this service: any other request is refused and fails the test, except the shop's own landing pages, which the
 * test answers itself. Screenshots go to test-artifacts/checkout/ (git-ignored).
 */
import { expect } from 'chai';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { Database } from '../src/db/database.ts';
import { runSettlementBatch } from '../src/payments/jobs.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';
import { movableClock, TEST_CARD } from './support/payments.ts';
import { until } from './support/until.ts';
import { installedChromium } from './support/chromium.ts';

const ARTIFACTS = path.join(import.meta.dirname, '..', 'test-artifacts', 'checkout');
const SHOP = 'https://shop.example.com';


const executablePath = installedChromium();
const title = executablePath === null
  ? 'hosted checkout in headless Chromium — skipped: no `chromium` on PATH (Debian: apt-get install chromium; CI installs it)'
  : 'hosted checkout in headless Chromium, offline';

(executablePath === null ? describe.skip : describe)(title, function () {
  this.timeout(180_000);
  let database: Database;
  let service: TestService;
  let browser: Browser;
  let headers: Record<string, string>;
  let identityId: string;
  let accountNumber: string;
  const clock = movableClock();

  const post = async (route: string, body?: unknown) => {
    const response = await service.request('POST', route, { headers, body });
    expect(response.status, `${route}: ${response.text}`).to.be.oneOf([200, 201]);
    return response.body as Record<string, any>;
  };
  const terms = (extra: Record<string, unknown> = {}) => ({
    items: [
      { description: 'Coffee 1 kg', preTaxAmount: '10000', tax: { name: 'IVA', type: 'PERCENTAGE', value: '19' } },
      { description: 'Mug', preTaxAmount: '3500' },
    ],
    currency: 'CLP', paymentMethodsAllowed: ['CARD'], duration: 600, owner: { identityId },
    destinations: [{ type: 'ACCOUNT', amount: '15400', account: { type: 'CHECKING', currency: 'CLP', accountNumber, accountHolder: 'Shop' } }],
    customerRequirements: ['email', 'firstName'], successUrl: `${SHOP}/thanks`, failedUrl: `${SHOP}/sorry`, ...extra,
  });

  /** A page that may reach this service and the shop's landing pages only; anything else is recorded and refused. */
  async function newPage(): Promise<{ page: Page; elsewhere: string[]; problems: string[] }> {
    const page = await browser.newPage();
    const origin = new URL(service.baseUrl).origin;
    const elsewhere: string[] = [];
    const problems: string[] = [];
    await page.route('**/*', async (route) => {
      const url = new URL(route.request().url());
      if (url.origin === origin) return route.continue();
      if (url.origin === SHOP) return route.fulfill({ status: 200, contentType: 'text/html', body: `<h1>Shop: ${url.pathname}</h1>` });
      elsewhere.push(url.href);
      return route.abort();
    });
    page.on('console', (message) => { if (message.type() === 'error') problems.push(message.text()); });
    page.on('pageerror', (error) => problems.push(error.message));
    return { page, elsewhere, problems };
  }

  const screenshot = (page: Page, name: string) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

  /** Plays the settlement batch until the session's payment settles (a card settles T+2, in a batch). */
  async function settleWhenReceived(token: string) {
    await until(async () => {
      await runSettlementBatch(service.services);
      const status = (await service.request('GET', `/checkout/${token}/status`)).body;
      return status.status === 'FINISHED' || status.status === 'FAILED';
    }, { what: 'the session’s payment ended', timeoutMs: 60_000, intervalMs: 200 });
  }

  async function fillCard(page: Page, number: string) {
    await page.getByLabel('Email').fill('ana@example.com');
    await page.getByLabel('First name').fill('Ana');
    await page.getByLabel('Card number').fill(number);
    await page.getByLabel('Name on card').fill(TEST_CARD.holder);
    await page.getByLabel('Expiry month (MM)').fill(TEST_CARD.expiryMonth);
    await page.getByLabel('Expiry year (YYYY)').fill(TEST_CARD.expiryYear);
    await page.getByLabel('Security code (CVV)').fill('123');
  }

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    database = await databaseTargets()[0]!.open();
    service = await startTestService(database, { runtime: clock });
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

  it('a payer opens a link, fills the required fields, pays with a sandbox card, sees success and lands on successUrl', async () => {
    const link = await post('/payment-links', terms());
    const { page, elsewhere, problems } = await newPage();
    await page.goto(link.url);
    await page.getByRole('button', { name: 'Continue to payment' }).click();
    await page.waitForURL(/\/checkout\/[A-Za-z0-9_-]+$/);
    const token = new URL(page.url()).pathname.split('/').at(-1)!;
    await page.getByRole('heading', { name: 'Checkout' }).waitFor();
    const text = await page.locator('main').innerText();
    expect(text).to.include('IVA (19%): 1900 CLP').and.to.include('15400 CLP').and.to.include('Credit or debit card');
    expect(await page.locator('input').evaluateAll((inputs) => inputs.filter((i) => (i as unknown as { labels: ArrayLike<unknown> | null }).labels?.length === 0).map((i) => i.id)))
      .to.deep.equal([]);
    await screenshot(page, 'session-page');
    // Opened from the link, the session waited for a method (ATTEMPT); the page chose the one it shows first.
    await until(async () => (await service.request('GET', `/checkout/${token}/status`)).body.status === 'ACTIVE', { what: 'session ACTIVE' });

    await fillCard(page, TEST_CARD.number);
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByText('Processing your payment…').waitFor();
    await settleWhenReceived(token);
    await page.getByText('Payment complete. Thank you!').waitFor();
    await screenshot(page, 'payment-complete');
    await page.waitForURL(`${SHOP}/thanks`);
    expect(elsewhere).to.deep.equal([]);
    expect(problems).to.deep.equal([]);

    const sessions = (await service.request('GET', `/checkout-sessions?status=FINISHED`, { headers })).body.results;
    const session = sessions.find((s: { checkoutToken: string }) => s.checkoutToken === token);
    expect(session).to.include({ paymentLinkId: link.id, status: 'FINISHED' });
    const payment = (await service.request('GET', `/payments/${session.paymentId}`, { headers })).body;
    expect(JSON.stringify(payment)).not.to.include(TEST_CARD.number);
    const stored = await service.services.storage.store.readStream(`payment-${session.paymentId}`, { limit: 10 });
    expect(JSON.stringify(stored.map((e) => e.data))).not.to.include(TEST_CARD.number).and.not.to.include('"cvv"');
    await page.close();
  });

  it('the page shows each method’s total in every currency the session offers; paying in another one, the payment is in it', async () => {
    const session = await post('/checkout-sessions', terms());
    const { page, elsewhere, problems } = await newPage();
    await page.goto(session.url);
    const choices = await page.getByRole('radio').evaluateAll((radios) =>
      radios.map((radio) => (radio as unknown as { labels: ArrayLike<{ textContent: string }> }).labels[0]!.textContent));
    expect(choices).to.deep.equal(['Credit or debit card: 15400 CLP', 'Credit or debit card: 16.17 USD (1 CLP = 0.00105 USD)']);
    await page.getByRole('button', { name: 'Pay 15400 CLP' }).waitFor();
    await page.getByLabel(/16\.17 USD/).check();
    await page.getByRole('button', { name: 'Pay 16.17 USD' }).waitFor();
    await screenshot(page, 'session-page-currencies');
    await fillCard(page, TEST_CARD.number);
    await page.getByRole('button', { name: 'Pay 16.17 USD' }).click();
    await page.getByText('Processing your payment…').waitFor();
    await settleWhenReceived(session.checkoutToken);
    await page.waitForURL(`${SHOP}/thanks`);
    expect(elsewhere).to.deep.equal([]);
    expect(problems).to.deep.equal([]);
    const [payment] = (await service.request('GET', `/payments?checkoutSessionId=${session.id}`, { headers })).body.results;
    expect(payment).to.include({
      status: 'SETTLED', totalAmount: '15400', currency: 'CLP', purchaseCurrency: 'USD', purchaseAmount: '16.17', product: 'CLP:USD',
    });
    expect(payment.origins[0]).to.include({ type: 'CARD', currency: 'USD', amount: '16.17' });
    await page.close();
  });

  it('a declined card lands on failedUrl', async () => {
    const session = await post('/checkout-sessions', terms());
    const { page, elsewhere } = await newPage();
    await page.goto(session.url);
    await fillCard(page, '4000000000000002');
    await page.getByRole('button', { name: /^Pay / }).click();
    await page.getByText('Payment failed. No money was taken.').waitFor();
    await screenshot(page, 'payment-failed');
    await page.waitForURL(`${SHOP}/sorry`);
    expect(elsewhere).to.deep.equal([]);
    await page.close();
  });

  it('a payer using the keyboard only fills the form and pays; the focus is always visible', async () => {
    const session = await post('/checkout-sessions', terms());
    const { page } = await newPage();
    await page.goto(session.url);
    const values: Record<string, string> = {
      'customer-email': 'kay@example.com', 'customer-firstName': 'Kay', 'field-CARD-number': TEST_CARD.number,
      'field-CARD-holder': 'Kay Board', 'field-CARD-expiryMonth': '12', 'field-CARD-expiryYear': '2099', 'field-CARD-cvv': '321',
    };
    const filled = new Set<string>();
    /** Tab presses allowed to reach the pay button. */
    const MAX_TABS = 30;
    for (let tabs = 0; tabs < MAX_TABS; tabs++) {
      await page.keyboard.press('Tab');
      const focused = await page.evaluate<{ id: string; outline: string }>(
        '(() => { const e = document.activeElement; return { id: e.id, outline: getComputedStyle(e).outlineStyle }; })()');
      expect(focused.outline, `focus on #${focused.id} is visible`).not.to.equal('none');
      if (values[focused.id] !== undefined) {
        await page.keyboard.type(values[focused.id]!);
        filled.add(focused.id);
      }
      if (focused.id === 'pay') break;
    }
    expect([...filled].sort()).to.deep.equal(Object.keys(values).sort());
    await page.keyboard.press('Enter');
    await page.getByText('Processing your payment…').waitFor();
    await settleWhenReceived(session.checkoutToken);
    await page.waitForURL(`${SHOP}/thanks`);
    await page.close();
  });

  it('a missing required field is announced and takes the focus', async () => {
    const session = await post('/checkout-sessions', terms());
    const { page } = await newPage();
    await page.goto(session.url);
    await page.getByRole('button', { name: /^Pay / }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'Please fill in' });
    await alert.waitFor();
    expect(await alert.innerText()).to.include('Email').and.to.include('Card number');
    expect(await page.evaluate<string>('document.activeElement.id')).to.equal('error');
    await page.close();
  });

  it('a deactivated link and an expired session show their pages', async () => {
    const link = await post('/payment-links', terms());
    expect((await service.request('DELETE', `/payment-links/${link.id}`, { headers })).status).to.equal(200);
    const { page } = await newPage();
    const answer = await page.goto(link.url);
    expect(answer?.status()).to.equal(410);
    await page.getByRole('heading', { name: 'This payment link is deactivated' }).waitFor();
    await screenshot(page, 'link-deactivated');

    const session = await post('/checkout-sessions', terms({ duration: 30 }));
    clock.advance(31_000);
    await page.goto(session.url);
    await page.getByRole('heading', { name: 'This checkout has expired' }).waitFor();
    await screenshot(page, 'session-expired');
    await page.close();
  });
});
