/**
 * Documented sandbox triggers: markers in a payment's `description` (and one card) that make the sandbox
 * provider take a branch it would otherwise never take, so every branch is reachable from the API. The README
 * lists them as a table; keep the two in step.
 */
export const TRIGGERS = {
  decline: 'sandbox:decline',
  review: 'sandbox:review',
  unsettled: 'sandbox:unsettled',
  expireQuote: 'sandbox:expire-quote',
  /** In a refund's `reason`: the provider rejects the refund (FAILED), cannot reconcile it (UNSETTLED), lets it lapse (EXPIRED). */
  refundFail: 'sandbox:refund-fail',
  refundUnsettled: 'sandbox:refund-unsettled',
  refundExpire: 'sandbox:refund-expire',
} as const;
export type Trigger = keyof typeof TRIGGERS;

/** A Luhn-valid test card the sandbox issuer always declines (shown masked as 400000******0002). */
export const DECLINED_CARD = { number: '4000000000000002', bin: '400000', last4: '0002' } as const;

export function hasTrigger(description: string | null | undefined, trigger: Trigger): boolean {
  return typeof description === 'string' && description.toLowerCase().includes(TRIGGERS[trigger]);
}
