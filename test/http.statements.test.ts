/**
 * Finance's view of one account: statements over a range (JSON and CSV) and balances at an instant, checked
 * against random histories of movements spread over time (an injected clock dates them).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import type { Database } from '../src/db/database.ts';
import { Decimal } from '../src/domain/money.ts';
import { databaseTargets } from './support/targets.ts';
import { startTestService, type TestService } from './support/testService.ts';
import { randomUUID } from 'node:crypto';
import type { Runtime } from '../src/domain/runtime.ts';

/** RFC 4180: quoted fields may hold commas, quotes (doubled) and line breaks; records end with CRLF. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; } else if (c === '"') quoted = false; else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { record.push(field); field = ''; } else if (c === '\r' && text[i + 1] === '\n') {
      record.push(field); records.push(record); record = []; field = ''; i++;
    } else field += c;
  }
  expect(field === '' && record.length === 0, 'the CSV ends with a complete record').to.equal(true);
  return records;
}

interface Movement { at: Date; amount: string }

for (const target of databaseTargets()) {
  describe(`account statements and balances at an instant: ${target.name}`, function () {
    this.timeout(180_000);
    let database: Database;
    let service: TestService;
    let headers: Record<string, string>;
    let client: Awaited<ReturnType<TestService['createClient']>>;
    let identityId: string;
    // A clock that stands still until the test moves it: each movement is dated exactly when the test says.
    let instant = Date.now();
    const clock: Runtime & { advance(ms: number): void } = {
      now: () => new Date(instant), newId: () => randomUUID(), advance: (ms) => { instant += ms; },
    };

    before(async () => {
      database = await target.open();
      service = await startTestService(database, { runtime: clock });
      client = await service.createClient('Finance');
      headers = await service.as(client);
      identityId = (await service.request('POST', '/identities', { headers, body: { type: 'ORGANIZATION', name: 'Books', country: 'CHL' } })).body.id;
    });
    after(async () => {
      await service?.close();
      await database?.close();
    });

    it('opening + lines = closing; the CSV reads back as the same lines; balances at an instant follow the lines', async () => {
      const step = fc.record({
        advanceMs: fc.integer({ min: 1, max: 6 * 3_600_000 }),
        cents: fc.integer({ min: -50_000, max: 100_000 }).filter((n) => n !== 0),
      });
      await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), fc.nat(), fc.nat(), async (steps, a, b) => {
        // The clock runs hours ahead between runs: a token from the current time.
        headers = await service.as(client);
        const account = (await service.request('POST', '/accounts', { headers, body: { identityId, type: 'CHECKING', currency: 'USD' } })).body;
        const applied: Movement[] = [];
        for (const { advanceMs, cents } of steps) {
          clock.advance(advanceMs);
          const amount = new Decimal(cents).div(100).toFixed(2);
          const at = clock.now();
          const answer = await service.operator('POST', `/operator/accounts/${account.id}/adjustments`, { amount, reason: `move, "${cents}"` });
          // A debit beyond the balance is refused and moves nothing.
          expect([201, 422], answer.text).to.include(answer.status);
          if (answer.status === 201) applied.push({ at, amount });
        }
        clock.advance(1);
        headers = await service.as(client);
        // A range chosen among the movements' instants (a boundary may fall exactly on one).
        const instants = [applied[0]?.at ?? clock.now(), ...applied.map((m) => m.at), clock.now()].map((d) => d.getTime());
        const [low, high] = [instants[a % instants.length]!, instants[b % instants.length]!].sort((x, y) => x - y) as [number, number];
        const from = low;
        const to = high === low ? low + 1 : high;
        const sum = (movements: Movement[]) => movements.reduce((s, m) => s.plus(m.amount), new Decimal(0));
        const inRange = applied.filter((m) => m.at.getTime() >= from && m.at.getTime() < to);

        const query = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
        const statement = await service.request('GET', `/accounts/${account.id}/statement?${query}`, { headers });
        expect(statement.status, statement.text).to.equal(200);
        const body = statement.body as { openingBalance: string; closingBalance: string; lines: Array<{ occurredAt: string; entryId: string; lineNo: number; description: string; amount: string; balanceAfter: string; paymentId: string | null; eventId: string }> };
        expect(body.openingBalance).to.equal(sum(applied.filter((m) => m.at.getTime() < from)).toFixed(2));
        expect(body.lines.map((l) => [l.occurredAt, l.amount])).to.deep.equal(inRange.map((m) => [m.at.toISOString(), m.amount]));
        const total = body.lines.reduce((s, l) => s.plus(l.amount), new Decimal(body.openingBalance));
        expect(body.closingBalance).to.equal(total.toFixed(2));
        if (body.lines.length > 0) expect(body.lines.at(-1)!.balanceAfter).to.equal(body.closingBalance);

        const csv = await service.request('GET', `/accounts/${account.id}/statement?${query}`, { headers: { ...headers, accept: 'text/csv' }, unchecked: true });
        expect(csv.headers.get('content-type')).to.match(/^text\/csv/);
        const [header, opening, ...rest] = parseCsv(csv.text);
        const closing = rest.pop()!;
        expect(header).to.deep.equal(['occurredAt', 'entryId', 'lineNo', 'description', 'amount', 'balanceAfter', 'paymentId', 'eventId']);
        expect([opening![3], opening![5]]).to.deep.equal(['opening balance', body.openingBalance]);
        expect([closing[3], closing[5]]).to.deep.equal(['closing balance', body.closingBalance]);
        expect(rest).to.deep.equal(body.lines.map((l) =>
          [l.occurredAt, l.entryId, String(l.lineNo), l.description, l.amount, l.balanceAfter, l.paymentId ?? '', l.eventId]));

        const balanceAt = async (instant: number) =>
          (await service.request('GET', `/accounts/${account.id}/balance?asOf=${new Date(instant).toISOString()}`, { headers })).body.balance as string;
        const live = (await service.request('GET', `/accounts/${account.id}`, { headers })).body.balance as string;
        expect(await balanceAt(clock.now().getTime())).to.equal(live);
        // At an instant: the balance after the last movement at or before it.
        expect(await balanceAt(from)).to.equal(sum(applied.filter((m) => m.at.getTime() <= from)).toFixed(2));
        expect(await balanceAt(to - 1)).to.equal(body.closingBalance);
      }), { numRuns: Number(process.env.STATEMENT_RUNS ?? 12) });
    });

    it('refuses a range that does not run forwards, and another client’s account is a 404', async () => {
      headers = await service.as(client);
      const account = (await service.request('POST', '/accounts', { headers, body: { identityId, type: 'CHECKING', currency: 'USD' } })).body;
      const backwards = await service.request('GET', `/accounts/${account.id}/statement?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z`, { headers });
      expect(backwards.status).to.equal(400);
      expect(backwards.body.message).to.match(/from must be before to/);
      const missing = await service.request('GET', `/accounts/${account.id}/statement?from=2026-01-01T00:00:00Z`, { headers });
      expect(missing.status).to.equal(400);
      const badInstant = await service.request('GET', `/accounts/${account.id}/balance?asOf=2026-02-30T00:00:00Z`, { headers });
      expect(badInstant.status).to.equal(400);

      const other = await service.as(await service.createClient('Someone else'));
      for (const path of [`/accounts/${account.id}/statement?from=2026-01-01T00:00:00Z&to=2026-02-01T00:00:00Z`, `/accounts/${account.id}/balance?asOf=2026-01-01T00:00:00Z`]) {
        const answer = await service.request('GET', path, { headers: other });
        expect(answer.status, path).to.equal(404);
      }
    });

    it('a closed account’s statement and balances stay readable to its owner, and stay 404 to another client', async () => {
      headers = await service.as(client);
      const account = (await service.request('POST', '/accounts', { headers, body: { identityId, type: 'CHECKING', currency: 'USD' } })).body;
      clock.advance(60_000);
      const credited = clock.now();
      expect((await service.operator('POST', `/operator/accounts/${account.id}/adjustments`, { amount: '75.00', reason: 'in' })).status).to.equal(201);
      clock.advance(60_000);
      const open = clock.now();
      clock.advance(60_000);
      expect((await service.operator('POST', `/operator/accounts/${account.id}/adjustments`, { amount: '-75.00', reason: 'out' })).status).to.equal(201);
      clock.advance(60_000);
      expect((await service.request('DELETE', `/accounts/${account.id}`, { headers })).status).to.equal(200);
      expect((await service.request('GET', `/accounts/${account.id}`, { headers })).status).to.equal(404);

      const range = `from=${new Date(credited.getTime() - 1).toISOString()}&to=${clock.now().toISOString()}`;
      const statement = await service.request('GET', `/accounts/${account.id}/statement?${range}`, { headers });
      expect(statement.status, statement.text).to.equal(200);
      expect(statement.body).to.include({ accountId: account.id, currency: 'USD', openingBalance: '0.00', closingBalance: '0.00' });
      expect(statement.body.lines.map((l: { amount: string }) => l.amount)).to.deep.equal(['75.00', '-75.00']);
      const balance = await service.request('GET', `/accounts/${account.id}/balance?asOf=${open.toISOString()}`, { headers });
      expect(balance.status, balance.text).to.equal(200);
      expect(balance.body).to.include({ accountId: account.id, currency: 'USD', balance: '75.00' });

      const other = await service.as(await service.createClient('Another one'));
      for (const path of [`/accounts/${account.id}/statement?${range}`, `/accounts/${account.id}/balance?asOf=${open.toISOString()}`]) {
        expect((await service.request('GET', path, { headers: other })).status, path).to.equal(404);
      }
    });
  });
}
