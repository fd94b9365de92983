/**
 * One stream, one decider, one way to write. The streams are listed from the contexts' manifests (the list the
 * service is assembled from): every stream prefix names one decider, and a stream's name picks exactly one of them;
 * the payment's stream decides its refunds', a deposit's and a companion's commands through one composed decider.
 * And nothing but the event store appends: every other write goes through `runCommand`.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { contexts } from '../src/contexts.ts';
import type { Decider } from '../src/domain/decider.ts';
import { composeParts, type AnyStreamType } from '../src/eventstore/streams.ts';

const ROOT = join(import.meta.dirname, '..');

/** Every stream type of the service, with the context that lists it. */
const streams: Array<{ context: string; type: AnyStreamType }> = contexts.flatMap((context) =>
  (context.streams ?? []).map((type) => ({ context: context.name, type })));

/** The stream type that decides `stream`: the one with the longest prefix it starts with. */
function typeOf(stream: string): AnyStreamType | null {
  const matching = streams.filter(({ type }) => stream.startsWith(type.prefix));
  matching.sort((a, b) => b.type.prefix.length - a.type.prefix.length);
  return matching[0]?.type ?? null;
}

describe('streams and their deciders', () => {
  it('lists each stream prefix once, each with its own decider and a wait for every command it decides', () => {
    const table = streams.map(({ context, type }) => `${type.prefix.padEnd(20)} ${context.padEnd(11)} ${Object.keys(type.readModels).join(', ')}`);
    // The table, as the code has it (printed for the reader of the test run).
    console.log(`      stream prefix        context     commands\n      ${table.join('\n      ')}`);
    expect(streams.length).to.be.greaterThan(10);
    const prefixes = streams.map(({ type }) => type.prefix);
    expect(new Set(prefixes).size, 'a prefix listed twice').to.equal(prefixes.length);
    const deciders = streams.map(({ type }) => type.decider);
    expect(new Set(deciders).size, 'a decider serving two stream types').to.equal(deciders.length);
    for (const { type } of streams) expect(Object.keys(type.readModels), type.prefix).to.not.be.empty;
  });

  it('a stream of each type is decided by that type alone, where prefixes nest (account- and account-number-)', () => {
    for (const { type } of streams) {
      // Ids are UUIDs (or digits, for numbers): a stream of one type never reads as another's longer prefix.
      const stream = type.prefix.endsWith('-') ? `${type.prefix}${randomUUID()}` : type.prefix;
      expect(typeOf(stream), stream).to.equal(type);
    }
    expect(typeOf(`account-number-${'1'.repeat(12)}`)?.prefix).to.equal('account-number-');
    expect(typeOf(`payment-attempt-${randomUUID()}`)?.prefix).to.equal('payment-attempt-');
  });

  it('the payment stream decides the payment’s, its refunds’, a deposit’s and a companion’s commands with one decider', () => {
    const payment = typeOf(`payment-${randomUUID()}`)!;
    expect(payment.readModels).to.include.keys('CreatePayment', 'Settle', 'RequestRefund', 'EndRefund', 'RecordDeposit', 'ExpireDeposit',
      'CreateCompanion', 'CancelCompanion');
    expect(payment.decider.initialState).to.have.keys('payment', 'refunds', 'deposit', 'companion');
  });
});

describe('composed deciders', () => {
  type Event = { type: 'Counted' | 'Named'; data: { value: string } };
  const counting: Decider<{ type: 'Count' }, Event, number> = {
    initialState: 0,
    decide: () => [{ type: 'Counted', data: { value: '1' } }],
    evolve: (state, event) => (event.type === 'Counted' ? state + 1 : state),
  };
  const naming: Decider<{ type: 'Name'; name: string }, Event, string[]> = {
    initialState: [],
    decide: (command) => [{ type: 'Named', data: { value: command.name } }],
    evolve: (state, event) => [...state, `${event.type}:${event.data.value}`],
  };

  it('send a command to the part that names it, and fold every event once into every part', () => {
    const { decider, readModels } = composeParts({
      count: { decider: counting, readModels: { Count: 'none' } },
      name: { decider: naming, readModels: { Name: 'written' } },
    });
    expect(readModels).to.deep.equal({ Count: 'none', Name: 'written' });
    const named = decider.decide({ type: 'Name', name: 'a' }, decider.initialState);
    expect(named).to.deep.equal([{ type: 'Named', data: { value: 'a' } }]);
    const state = [...decider.decide({ type: 'Count' }, decider.initialState), ...named].reduce(decider.evolve, decider.initialState);
    expect(state).to.deep.equal({ count: 1, name: ['Counted:1', 'Named:a'] });
  });

  it('refuse two parts that decide the same command', () => {
    expect(() => composeParts({
      one: { decider: counting, readModels: { Count: 'none' } },
      two: { decider: counting, readModels: { Count: 'none' } },
    })).to.throw(/Count is both one's and two's/);
  });
});

describe('one way to write', () => {
  /** The service's own code: everything but the event store itself. */
  function sources(dir: string): string[] {
    return readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) return sources(path);
      return path.endsWith('.ts') ? [path] : [];
    });
  }
  const outsideTheStore = ['src', 'projections', 'schemas'].flatMap((dir) => sources(join(ROOT, dir)))
    .filter((path) => !relative(ROOT, path).startsWith(join('src', 'eventstore')));

  it('no `.append(` outside src/eventstore/, and every command (and fold of a stream) through its stream type', () => {
    expect(outsideTheStore.length).to.be.greaterThan(100);
    const appends = outsideTheStore.filter((path) => readFileSync(path, 'utf8').includes('.append('));
    expect(appends.map((path) => relative(ROOT, path))).to.deep.equal([]);
    const handled = outsideTheStore.filter((path) => /\b(handleCommand|readState)\(/.test(readFileSync(path, 'utf8')));
    expect(handled.map((path) => relative(ROOT, path))).to.deep.equal([]);
  });
});
