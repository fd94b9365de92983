/** What the payment tests share: a card the sandbox approves, a clock they move, the provider's signed notice. */
import { randomUUID } from 'node:crypto';
import type { Runtime } from '../../src/domain/runtime.ts';
import { providerSignature } from '../../src/payments/routes.ts';
import type { ApiResponse, TestService } from './testService.ts';

/** A valid, unexpired test card (Luhn-valid, not one of the sandbox's trigger numbers). */
export const TEST_CARD = { number: '4111111111111111', holder: 'Ana Pérez', expiryMonth: '12', expiryYear: '2099' } as const;

/** A clock the test moves forward; ids stay random. */
export function movableClock(): Runtime & { advance(ms: number): void } {
  let offset = 0;
  return { now: () => new Date(Date.now() + offset), newId: () => randomUUID(), advance: (ms) => { offset += ms; } };
}

/** The provider telling the service a payment's funds arrived, signed with `secret` unless a signature is given. */
export function providerReceipts(service: () => TestService, secret: string) {
  return (transactionId: string, signature = providerSignature(secret, transactionId)): Promise<ApiResponse> =>
    service().request('POST', '/payments/received', { body: { transactionId, signature }, headers: { 'user-agent': 'provider' } });
}
