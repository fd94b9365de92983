/**
 * What a decider refuses, in domain terms. The HTTP edge maps each kind to its status and category; the
 * deciders know nothing of HTTP.
 */
export type DomainErrorKind =
  | 'notFound' | 'alreadyExists' | 'failedPrecondition' | 'invalid'
  /** Too many concurrent writers on one object: nothing was applied, and the same request may be retried. */
  | 'contention';

export class DomainError extends Error {
  override readonly name = 'DomainError';
  constructor(readonly kind: DomainErrorKind, message: string) {
    super(message);
  }
}

export const domainNotFound = (message: string) => new DomainError('notFound', message);
export const domainConflict = (message: string) => new DomainError('alreadyExists', message);
export const domainPrecondition = (message: string) => new DomainError('failedPrecondition', message);
export const domainInvalid = (message: string) => new DomainError('invalid', message);
