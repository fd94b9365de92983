/**
 * Do the reactors keep up with the writers? The whole service with the sandbox autopilot on and the settlement
 * batch every second; card payments created over HTTP at full rate (16 connections) for BENCH_AUTOPILOT_SECONDS
 * (default 60), then the time from the end of the load until every one of them is SETTLED in the read model (the
 * autopilot authorizes, captures and receives each, the settlement batch settles it through its account).
 * Prints figures; never fails.
 */
import type { Database } from '../src/db/database.ts';
import { CONNECTIONS, startLoadGenerator, type Report } from './loadReport.ts';
import { card, provisionMerchant } from './dataset.ts';
import { startService, type BenchService } from './service.ts';

const SECONDS = Number(process.env.BENCH_AUTOPILOT_SECONDS ?? 60);
/** How long the run waits for the last payments to settle before it reports how many are left. */
const DRAIN_TIMEOUT_MS = Number(process.env.BENCH_AUTOPILOT_DRAIN_SECONDS ?? 600) * 1000;

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

export async function benchAutopilot(target: string, database: Database, report: Report): Promise<void> {
  const loadgen = await startLoadGenerator();
  let service: BenchService | null = null;
  try {
    service = await startService(database, {
      schedule: true,
      env: { SANDBOX_AUTOPILOT: 'true', SETTLEMENT_CRON: '* * * * * *', EXPIRY_CRON: '*/10 * * * * *' },
    });
    const merchant = await provisionMerchant(service.baseUrl);
    const unsettled = async () => Number((await database.query<{ n: string }>(
      `SELECT count(*) FILTER (WHERE status <> 'SETTLED') AS n FROM payments WHERE client_id = $1`, [merchant.clientId])).rows[0]!.n);
    const result = await loadgen.run({
      baseUrl: service.baseUrl, connections: CONNECTIONS, method: 'POST', paths: ['/payments'], headers: merchant.headers,
      seconds: SECONDS, idempotencyKeys: true,
      body: { identityId: merchant.identityId, type: 'PURCHASE', accountNumber: merchant.accounts[0]!.accountNumber, totalAmount: '100.00', currency: 'USD', origins: [{ type: 'CARD', card }] },
    });
    const stopped = performance.now();
    const atStop = await unsettled();
    let left = atStop;
    while (left > 0 && performance.now() - stopped < DRAIN_TIMEOUT_MS) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      left = await unsettled();
    }
    const lagMs = performance.now() - stopped;
    report(target, `autopilot: card payments created at full rate for ${SECONDS} s`,
      `${fmt(result.completed)} (${fmt(result.requestsPerSecond)}/s, ${fmt(result.non2xx)} non-2xx), ${fmt(atStop)} not yet SETTLED when the load stopped`);
    report(target, 'autopilot: all SETTLED after the load stopped',
      left > 0
        ? `NOT within ${fmt(DRAIN_TIMEOUT_MS / 1000)} s: ${fmt(left)} left  target ≤ 10 s: MISSED`
        : `${fmt(lagMs / 1000, 1)} s  target ≤ 10 s: ${lagMs <= 10_000 ? 'met' : 'MISSED'}`);
  } finally {
    loadgen.close();
    await service?.close();
  }
}
