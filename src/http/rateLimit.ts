/**
 * Per-caller token buckets, in memory (per process): a burst up to `burst` requests, refilled at
 * `perSecond`. Past it, 429 with Retry-After. The table of buckets is bounded.
 */
import { tooManyRequests } from './errors.ts';

const MAX_BUCKETS = 100_000;

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly perSecond: number, private readonly burst: number, private readonly now = () => Date.now()) {}

  /** Takes one token for `key` or throws 429. */
  take(key: string): void {
    if (this.perSecond <= 0) return;
    const bucket = this.refill(key);
    if (bucket.tokens < 1) throw tooManyRequests(this.retryAfterSeconds(bucket));
    bucket.tokens -= 1;
  }

  private retryAfterSeconds(bucket: { tokens: number }): number {
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.perSecond));
  }

  /** Whether this limiter limits at all (a rate of 0 is no limit, and keeps no buckets). */
  get limits(): boolean {
    return this.perSecond > 0;
  }

  /** Whether `key` has a bucket: it took a token lately (and was not forgotten since). */
  has(key: string): boolean {
    return this.buckets.has(key);
  }

  /** Drops `key`'s bucket: the next request for it starts a new one. */
  forget(key: string): void {
    this.buckets.delete(key);
  }

  /** Throws 429 when `key` has no token left, without taking one. */
  check(key: string): void {
    if (this.perSecond <= 0) return;
    const bucket = this.refill(key);
    if (bucket.tokens < 1) throw tooManyRequests(this.retryAfterSeconds(bucket));
  }

  private refill(key: string): { tokens: number; at: number } {
    const now = this.now();
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= MAX_BUCKETS) this.buckets.delete(this.buckets.keys().next().value!);
      bucket = { tokens: this.burst, at: now };
      this.buckets.set(key, bucket);
    }
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    return bucket;
  }
}
