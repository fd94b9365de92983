/**
 * The webhook dispatcher: a background worker that claims due deliveries from the outbox (src/webhooks/outbox.ts)
 * and POSTs them, signed, to their endpoints. Any number of dispatchers (processes) may share one outbox: a
 * claim locks with `FOR UPDATE SKIP LOCKED` and leases what it took, so one delivery is never being sent by two
 * at once, and a dispatcher killed mid-delivery leaves a lease that runs out, after which another sends it again.
 * A dispatcher never claims a delivery it holds itself (sending it, waiting for a slot for it, or recording its
 * attempt), so it sends a delivery again only once its previous attempt has an outcome on record.
 *
 * Bounds: one attempt lasts at most DELIVERY_TIMEOUT_MS (10 s) from connecting to the end of the answer; a
 * dispatcher runs at most `maxConcurrent` attempts, and at most `maxPerEndpoint` to one endpoint, so a slow or
 * dead receiver holds at most that many of its slots while the others serve the other endpoints. A slot is free
 * again once the receiver has answered: the attempts are recorded after that, those that end together in one
 * statement (the claim's lease keeps the delivery from being claimed again until its attempt is recorded). A 2xx answer
 * delivers; anything else (another status, a refused connection, a timeout) is retried 30 s later, doubling to
 * 1 h, until the next attempt would come more than 24 h after the first: then the delivery is dropped.
 *
 * Due times and the 24-hour window come from the injected clock, so tests move them forward. Leases do not: they
 * run on the database's clock (./outbox.ts), and how long a claim may still wait for a slot is measured here on the
 * monotonic clock, so moving the injected clock ends no lease of an attempt in flight.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Database } from '../db/database.ts';
import { isUndefinedTable } from '../db/sql.ts';
import type { Logger } from '../logging.ts';
import { Coalescer } from '../db/coalescer.ts';
import { claimDue, outboxDepth, recordAttempts, releaseClaim, type AttemptOutcome, type AttemptResult, type ClaimedDelivery } from './outbox.ts';
import type { SecretBox } from './secrets.ts';
import { deliveryHeaders } from './signing.ts';
import { nonPublicAddressReason, refusedHostReason } from './url.ts';

/** The receiver must answer (status, headers and body) within this. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** What a claim's lease must still have left when its attempt starts, beyond the attempt's own bound: time to record its outcome. */
const LEASE_MARGIN_MS = 10_000;
/** Longest a claim waits, leased, for a slot before it is given back (it may still start with the margin left). */
const CLAIM_WAIT_MS = 10_000;
/**
 * How long a claim is leased (on the database's clock): the longest wait for a slot, the longest attempt, and the
 * margin for recording its outcome. A dispatcher that dies holding a claim delays that delivery by at most this.
 */
export const CLAIM_LEASE_MS = CLAIM_WAIT_MS + DELIVERY_TIMEOUT_MS + LEASE_MARGIN_MS;
/** Bytes of a receiver's answer read at most; the rest is not waited for. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** When idle, how often the outbox is looked at (new deliveries of this process wake it at once). */
const DEFAULT_IDLE_POLL_MS = 500;
/**
 * A dispatcher claims up to this many times what it may have in flight (per endpoint too), so that a slot that
 * frees starts its next attempt at once, without a round trip to the database: the rest waits here, leased, for a
 * slot. A claim waiting so long that its lease could run out during its attempt is given back unsent instead.
 */
const PREFETCH = 4;
/** Endpoints looked at per claim, in order of their oldest due delivery. */
const MAX_ENDPOINTS_PER_CLAIM = 1_000;
/** How often the outbox depth and the age of its oldest delivery are measured for the metrics. */
const DEPTH_INTERVAL_MS = 5_000;
/** After a claim that failed (the database unreachable), the wait before the next one. */
const CLAIM_FAILURE_BACKOFF_MS = 1_000;
/** After the webhook secret could not be opened, when the delivery is looked at again. */
const KEY_ERROR_RETRY_MS = 60_000;

export interface DispatcherMetrics {
  attempted(outcome: AttemptOutcome, seconds: number): void;
  outbox(pending: number, oldestAgeSeconds: number): void;
}

export interface DispatcherOptions {
  database: Database;
  secrets: () => Promise<SecretBox>;
  logger: Logger;
  /** The clock (tests inject theirs). */
  now: () => Date;
  /** Identifies this dispatcher in leases. */
  owner: string;
  allowPrivate: boolean;
  maxConcurrent: number;
  maxPerEndpoint: number;
  idlePollMs?: number;
  /** One attempt's bound, in ms (DELIVERY_TIMEOUT_MS unless a test says otherwise). */
  timeoutMs?: number;
  /** A claim's lease, in ms (CLAIM_LEASE_MS); at least CLAIM_WAIT_MS + the attempt's bound + LEASE_MARGIN_MS. */
  leaseMs?: number;
  metrics?: DispatcherMetrics;
  /** Called when an attempt ends, with what became of it (tests, benchmarks). */
  onAttempt?(claimed: ClaimedDelivery, result: AttemptResult, outcome: AttemptOutcome): void;
}

export class WebhookDispatcher {
  readonly name = 'webhook-dispatcher';
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly perEndpoint = new Map<string, number>();
  /** Claimed and not yet started, per endpoint, in due order, with when their lease runs out (performance.now() ms, at the earliest). */
  private readonly ready = new Map<string, Array<ClaimedDelivery & { leaseDeadline: number }>>();
  /** Deliveries claimed and not yet settled (recorded, given back, or left to their lease): never claimed again meanwhile. */
  private readonly held = new Set<string>();
  private readonly timeoutMs: number;
  private readonly leaseMs: number;
  private readyCount = 0;
  private readonly agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  private stopping = false;
  private loop: Promise<void> | null = null;
  private wakeUp: (() => void) | null = null;
  private pendingWake = false;
  private depthTimer: NodeJS.Timeout | null = null;
  /** Attempts answered and not yet recorded (stop waits for them). */
  private readonly recording = new Set<Promise<void>>();
  private readonly recorder: Coalescer<{ claimed: ClaimedDelivery; result: AttemptResult }, AttemptOutcome>;

  constructor(private readonly options: DispatcherOptions) {
    this.timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    this.leaseMs = options.leaseMs ?? CLAIM_LEASE_MS;
    // A shorter lease could run out during an attempt, and another dispatcher would send the delivery meanwhile; or
    // it would leave a claim no time to reach a slot, and every claim would be given back unsent.
    if (this.leaseMs < CLAIM_WAIT_MS + this.timeoutMs + LEASE_MARGIN_MS) {
      throw new RangeError(`a claim's lease (${this.leaseMs} ms) must cover a wait for a slot (${CLAIM_WAIT_MS} ms), an attempt `
        + `(${this.timeoutMs} ms) and the time to record it (${LEASE_MARGIN_MS} ms)`);
    }
    // Attempts that end in the same turn of the event loop, or while a batch is being recorded, share a statement.
    this.recorder = new Coalescer((attempts) => recordAttempts(options.database, attempts), { maxBatch: 500, maxInFlight: 2 });
  }

  start(): void {
    if (this.loop) return;
    this.loop = this.run();
    if (this.options.metrics) {
      this.depthTimer = setInterval(() => void this.measureDepth(), DEPTH_INTERVAL_MS);
      this.depthTimer.unref();
    }
  }

  /** Stops claiming, gives back what it claimed and did not start, and waits for the attempts in flight (each ends within the timeout). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.nudge();
    if (this.depthTimer) clearInterval(this.depthTimer);
    await this.loop;
    const unsent = [...this.ready.values()].flat();
    this.ready.clear();
    this.readyCount = 0;
    // Given back so that another dispatcher sends them now rather than when their lease runs out.
    await Promise.all(unsent.map((claimed) => this.giveBack(claimed)));
    await Promise.all(this.inFlight.values());
    await Promise.all(this.recording);
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  /** Looks at the outbox now rather than at the next poll (the emitter wrote deliveries). */
  nudge(): void {
    this.pendingWake = true;
    this.wakeUp?.();
  }

  /** One claim, and every attempt of what it claimed, to their end: what a test with its own clock drives. */
  async runOnce(): Promise<number> {
    const { started } = await this.claimAndSend();
    while (this.inFlight.size > 0 || this.readyCount > 0) {
      await Promise.all(this.inFlight.values());
      this.pump();
    }
    await Promise.all(this.recording);
    return started;
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      let claim: { started: number; asked: number };
      try {
        claim = await this.claimAndSend();
      } catch (error) {
        // On a new store the endpoints' read model appears when its projector first activates, moments after
        // the dispatcher starts: nothing can be due before it exists.
        if (isUndefinedTable(error)) this.options.logger.debug('webhook endpoints not projected yet; looking again shortly');
        else this.options.logger.error({ err: error }, 'webhook claim failed; trying again');
        await this.sleep(CLAIM_FAILURE_BACKOFF_MS);
        continue;
      }
      // Fewer than asked: nothing more is due now (or its endpoints are at their limit); or as much claimed as may
      // wait. The next look is when an attempt ends, the emitter writes, or the poll interval passes.
      if (claim.started < claim.asked || this.inFlight.size + this.readyCount >= PREFETCH * this.options.maxConcurrent) {
        await this.sleep(this.options.idlePollMs ?? DEFAULT_IDLE_POLL_MS);
      }
    }
  }

  /** Sleeps until `ms` pass, an attempt ends, or something nudges. */
  private async sleep(ms: number): Promise<void> {
    if (this.stopping || this.pendingWake) {
      this.pendingWake = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
    this.wakeUp = null;
    this.pendingWake = false;
  }

  /**
   * Claims what is due, up to PREFETCH times what may be in flight (so that the next attempt of a slot that frees starts at
   * once, without a round trip to the database), and starts what the slots allow.
   */
  private async claimAndSend(): Promise<{ started: number; asked: number }> {
    const { maxConcurrent, maxPerEndpoint } = this.options;
    const busy = new Map(this.perEndpoint);
    for (const [endpointId, queue] of this.ready) busy.set(endpointId, (busy.get(endpointId) ?? 0) + queue.length);
    const asked = Math.min(PREFETCH * maxConcurrent - this.inFlight.size - this.readyCount, MAX_ENDPOINTS_PER_CLAIM * maxPerEndpoint);
    if (asked <= 0) return { started: 0, asked: 0 };
    // Taken before the statement is sent: the lease it grants starts later, on the database's clock, so it runs at
    // least until then.
    const leaseDeadline = performance.now() + this.leaseMs;
    const claimed = (await claimDue(this.options.database, {
      now: this.options.now(), leaseMs: this.leaseMs, held: [...this.held], limit: asked, perEndpoint: PREFETCH * maxPerEndpoint, busy,
      owner: this.options.owner,
    })).map((delivery) => ({ ...delivery, leaseDeadline }));
    for (const delivery of claimed) {
      this.held.add(delivery.deliveryId);
      const queue = this.ready.get(delivery.endpointId);
      if (queue) queue.push(delivery);
      else this.ready.set(delivery.endpointId, [delivery]);
      this.readyCount++;
    }
    this.pump();
    return { started: claimed.length, asked };
  }

  /** Starts claimed deliveries while there are slots: at most `maxConcurrent`, and `maxPerEndpoint` per endpoint. */
  private pump(): void {
    const { maxConcurrent, maxPerEndpoint } = this.options;
    // An attempt started now ends by this (performance.now() ms) with the margin to record it: a claim whose lease
    // may run out before is given back unsent.
    const leaseNeeded = performance.now() + this.timeoutMs + LEASE_MARGIN_MS;
    for (const [endpointId, queue] of this.ready) {
      while (queue.length > 0 && this.inFlight.size < maxConcurrent && (this.perEndpoint.get(endpointId) ?? 0) < maxPerEndpoint) {
        const claimed = queue.shift()!;
        this.readyCount--;
        if (claimed.leaseDeadline < leaseNeeded) this.giveBack(claimed);
        else this.send(claimed);
      }
      if (queue.length === 0) this.ready.delete(endpointId);
      if (this.inFlight.size >= maxConcurrent) return;
    }
  }

  /** Gives an unsent claim back, so that it is claimed again now rather than once its lease runs out. */
  private giveBack(claimed: ClaimedDelivery): Promise<void> {
    const released = releaseClaim(this.options.database, claimed, null, null).catch((error: unknown) => {
      this.options.logger.warn({ err: error, delivery: claimed.deliveryId }, 'could not give a claim back; it is sent once its lease runs out');
    }).finally(() => this.held.delete(claimed.deliveryId));
    this.recording.add(released);
    void released.finally(() => this.recording.delete(released));
    return released;
  }

  private send(delivery: ClaimedDelivery): void {
    this.perEndpoint.set(delivery.endpointId, (this.perEndpoint.get(delivery.endpointId) ?? 0) + 1);
    const attempt = this.attempt(delivery).finally(() => {
      this.inFlight.delete(delivery.leaseToken + delivery.deliveryId);
      const left = (this.perEndpoint.get(delivery.endpointId) ?? 1) - 1;
      if (left === 0) this.perEndpoint.delete(delivery.endpointId);
      else this.perEndpoint.set(delivery.endpointId, left);
      if (!this.stopping) this.pump();
      this.nudge();
    });
    this.inFlight.set(delivery.leaseToken + delivery.deliveryId, attempt);
  }

  /**
   * Sends one claimed delivery and records the attempt. Never throws: a failure is logged, the lease runs out. The
   * delivery stays held (not claimed again by this dispatcher) until its attempt is recorded, or it is given back,
   * or left to its lease after a failure.
   */
  private async attempt(claimed: ClaimedDelivery): Promise<void> {
    const log = this.options.logger.child({ webhook: claimed.endpointId, delivery: claimed.deliveryId });
    let recording = false;
    try {
      let secret: string;
      try {
        secret = (await this.options.secrets()).open(claimed.endpointId, claimed.secret);
      } catch (error) {
        // Not the receiver's fault and not worth an attempt: the key changed (WEBHOOK_SECRETS_KEY). Tried again later.
        log.error({ err: error }, 'cannot open the webhook secret; the delivery waits');
        await releaseClaim(this.options.database, claimed, 'the webhook secret cannot be opened with the configured key',
          new Date(this.options.now().getTime() + KEY_ERROR_RETRY_MS));
        return;
      }
      const startedAt = this.options.now();
      const started = performance.now();
      const headers = deliveryHeaders({
        secret, body: claimed.body, deliveryId: claimed.deliveryId, eventId: claimed.eventId, eventType: claimed.eventType,
        sequence: claimed.sequence, timestampSeconds: Math.floor(startedAt.getTime() / 1000),
      });
      const answer = await this.post(claimed.url, claimed.body, headers);
      const result: AttemptResult = { startedAt, durationMs: performance.now() - started, ...answer };
      // The receiver's slot is free from here on (this attempt leaves inFlight when this returns); the record follows.
      const recorded = this.record(claimed, result, log).finally(() => this.held.delete(claimed.deliveryId));
      recording = true;
      this.recording.add(recorded);
      void recorded.finally(() => this.recording.delete(recorded));
    } catch (error) {
      log.error({ err: error }, 'webhook attempt failed before it was sent; its lease runs out and it is sent again');
    } finally {
      if (!recording) this.held.delete(claimed.deliveryId);
    }
  }

  /** Records an answered attempt (batched with those that ended with it). Never throws. */
  private async record(claimed: ClaimedDelivery, result: AttemptResult, log: Logger): Promise<void> {
    try {
      const outcome = await this.recorder.submit({ claimed, result });
      if (outcome === 'lease_lost') log.warn('the claim was taken over before the attempt was recorded; the delivery will be sent again');
      else if (outcome === 'dropped') log.warn({ statusCode: result.statusCode, error: result.error }, 'webhook delivery dropped after 24 hours of attempts');
      else if (outcome === 'retrying') log.info({ statusCode: result.statusCode, error: result.error }, 'webhook delivery failed; retrying later');
      this.options.metrics?.attempted(outcome, result.durationMs / 1000);
      this.options.onAttempt?.(claimed, result, outcome);
    } catch (error) {
      log.error({ err: error }, 'webhook attempt could not be recorded; its lease runs out and it is sent again');
    }
  }

  /** One POST, bounded by the timeout; answers the status, or the error when no answer came. */
  private post(rawUrl: string, body: string, headers: Record<string, string>): Promise<Pick<AttemptResult, 'statusCode' | 'error'>> {
    const timeoutMs = this.timeoutMs;
    const url = new URL(rawUrl);
    // An address written in the URL is connected to without a lookup, so it is judged here; a name, by the
    // lookup below, on the addresses the connection will use. A refusal is an attempt like any failed one.
    const refused = this.options.allowPrivate ? null : refusedHostReason(url.hostname);
    if (refused) return Promise.resolve({ statusCode: null, error: refused });
    return new Promise((resolve) => {
      let settled = false;
      const finish = (statusCode: number | null, error: string | null) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ statusCode, error });
      };
      const secure = url.protocol === 'https:';
      const request = (secure ? https : http).request(url, {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: secure ? this.agents.https : this.agents.http,
        ...(this.options.allowPrivate ? {} : { lookup: publicOnlyLookup }),
      });
      const timer = setTimeout(() => {
        request.destroy(new Error(`no complete answer within ${timeoutMs} ms`));
      }, timeoutMs);
      request.on('error', (error) => finish(null, error.message));
      request.on('response', (response) => {
        let bytes = 0;
        response.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          // Its status is all that counts; a receiver that answers at length is not read to the end.
          if (bytes > MAX_RESPONSE_BYTES) {
            finish(response.statusCode ?? null, null);
            response.destroy();
          }
        });
        response.on('end', () => finish(response.statusCode ?? null, null));
        response.on('error', (error) => finish(response.statusCode ?? null, error.message));
        response.on('aborted', () => finish(null, 'the answer was cut off'));
      });
      request.end(body);
    });
  }

  private async measureDepth(): Promise<void> {
    try {
      const { pending, oldestCreatedAt } = await outboxDepth(this.options.database);
      const age = oldestCreatedAt ? Math.max(0, (this.options.now().getTime() - oldestCreatedAt.getTime()) / 1000) : 0;
      this.options.metrics?.outbox(pending, age);
    } catch (error) {
      this.options.logger.warn({ err: error }, 'could not measure the webhook outbox');
    }
  }
}

/**
 * Resolves like dns.lookup, refusing when any address the name resolves to is not public. The connection is made
 * to the addresses this answers, and only to them, so a name that resolves to a public address when checked and
 * to a private one a moment later (DNS rebinding) cannot slip through: there is no second resolution.
 */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, options as LookupOptions, (error, address, family) => {
    if (error) return callback(error, address as string, family);
    const addresses: LookupAddress[] = Array.isArray(address) ? address : [{ address: address as string, family: family! }];
    for (const candidate of addresses) {
      const reason = nonPublicAddressReason(candidate.address);
      if (reason) {
        return callback(new Error(`${hostname} resolves to ${candidate.address}, not a public address (${reason}; WEBHOOK_ALLOW_PRIVATE is off)`), '', 4);
      }
    }
    (callback as (...args: unknown[]) => void)(null, address, family);
  });
};
