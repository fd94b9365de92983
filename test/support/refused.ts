/** Asserts a decider refuses: `decide` throws a DomainError of `kind` whose message matches. */
import { expect } from 'chai';
import { DomainError } from '../../src/domain/errors.ts';

export function expectRefused(decide: () => unknown, kind: DomainError['kind'], message: RegExp): void {
  try {
    decide();
  } catch (error) {
    expect(error).to.be.instanceOf(DomainError);
    expect((error as DomainError).kind).to.equal(kind);
    expect((error as DomainError).message).to.match(message);
    return;
  }
  expect.fail(`should be refused (${kind}, ${message})`);
}
