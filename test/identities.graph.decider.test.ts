/** The identity graph's decider: the rules of a client's parent/child graph, given its events, without a database. */
import { expect } from 'chai';
import fc from 'fast-check';
import { identityGraphDecider, type GraphMember, type IdentityGraphCommand } from '../src/identities/decider.ts';
import type { GraphLink, IdentityGraphEvent } from '../src/identities/events.ts';
import { DeciderSpecification } from './support/deciderSpecification.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const at = now.toISOString();
const clientId = 'c1';

/** Identities p, q, x, y, z of client c1; o of another client; d deleted on its own stream. */
const members: Record<string, GraphMember> = {
  p: { clientId, deleted: false }, q: { clientId, deleted: false }, x: { clientId, deleted: false },
  y: { clientId, deleted: false }, z: { clientId, deleted: false }, o: { clientId: 'c2', deleted: false },
  d: { clientId, deleted: true }, missing: { clientId: null, deleted: false },
};

type Decision =
  | { type: 'LinkChildren'; parentId: string; childIds: string[] }
  | { type: 'UnlinkChildren'; parentId: string; childIds: string[] }
  | { type: 'LeaveGraph'; identityId: string };

const linked = (parentId: string, childId: string): IdentityGraphEvent => ({ type: 'IdentityChildLinked', data: { clientId, parentId, childId, at } });
const unlinked = (parentId: string, childId: string): IdentityGraphEvent => ({ type: 'IdentityChildUnlinked', data: { clientId, parentId, childId, at } });
const left = (identityId: string, parentId: string | null = null): IdentityGraphEvent => ({ type: 'IdentityLeftGraph', data: { clientId, identityId, parentId, at } });
const seeded = (links: GraphLink[]): IdentityGraphEvent => ({ type: 'IdentityGraphSeeded', data: { clientId, links, at } });

const spec = DeciderSpecification.for(identityGraphDecider);
/** The graph's commands as client c1 sends them, with its members and, on an empty graph, the links made before it. */
function given(events: IdentityGraphEvent[], linksBefore: GraphLink[] | null = events.length > 0 ? null : []) {
  return {
    when: (decision: Decision) => spec.given(events).when({ ...decision, clientId, members, linksBefore, now } as IdentityGraphCommand),
  };
}

describe('identity graph decider', () => {
  it('is its client\'s alone: a command of another client finds no graph', () => {
    const command = { type: 'LinkChildren', parentId: 'o', childIds: ['o2'], clientId: 'c2', members, linksBefore: null, now } as IdentityGraphCommand;
    spec.given([linked('p', 'x')]).when(command).thenThrows('notFound', /^identity graph of client c2 not found$/);
  });

  it('links children of the same client; linking again changes nothing', () => {
    given([]).when({ type: 'LinkChildren', parentId: 'p', childIds: ['x', 'y'] }).then([linked('p', 'x'), linked('p', 'y')]);
    given([linked('p', 'x')]).when({ type: 'LinkChildren', parentId: 'p', childIds: ['x'] }).then([]);
    given([linked('p', 'x')]).when({ type: 'LinkChildren', parentId: 'p', childIds: ['x', 'y'] }).then([linked('p', 'y')]);
  });

  it('refuses identities that are not the client’s, do not exist, were deleted, or left the graph', () => {
    for (const stranger of ['o', 'missing', 'd', 'never-read']) {
      given([]).when({ type: 'LinkChildren', parentId: 'p', childIds: [stranger] }).thenThrows('notFound', new RegExp(`identity ${stranger} not found`));
      given([]).when({ type: 'LinkChildren', parentId: stranger, childIds: ['x'] }).thenThrows('notFound', new RegExp(`identity ${stranger} not found`));
      given([]).when({ type: 'LeaveGraph', identityId: stranger }).thenThrows('notFound', /not found/);
    }
    given([left('x')]).when({ type: 'LinkChildren', parentId: 'p', childIds: ['x'] }).thenThrows('notFound', /identity x not found/);
    given([left('p')]).when({ type: 'LinkChildren', parentId: 'p', childIds: ['x'] }).thenThrows('notFound', /identity p not found/);
  });

  it('one parent per child, never itself', () => {
    given([linked('p', 'x')]).when({ type: 'LinkChildren', parentId: 'q', childIds: ['x'] })
      .thenThrows('failedPrecondition', /identity x already has parent p/);
    given([]).when({ type: 'LinkChildren', parentId: 'p', childIds: ['p'] }).thenThrows('failedPrecondition', /own child/);
    given([linked('p', 'x'), unlinked('p', 'x')]).when({ type: 'LinkChildren', parentId: 'q', childIds: ['x'] }).then([linked('q', 'x')]);
  });

  it('never a cycle: an ancestor cannot become a descendant', () => {
    given([linked('x', 'y')]).when({ type: 'LinkChildren', parentId: 'y', childIds: ['x'] }).thenThrows('failedPrecondition', /x cannot be a child of y: it would make a cycle/);
    given([linked('x', 'y'), linked('y', 'z')]).when({ type: 'LinkChildren', parentId: 'z', childIds: ['x'] }).thenThrows('failedPrecondition', /cycle/);
    // A refusal refuses the whole command: nothing of it is linked.
    given([linked('x', 'y')]).when({ type: 'LinkChildren', parentId: 'y', childIds: ['z', 'x'] }).thenThrows('failedPrecondition', /cycle/);
  });

  it('unlinks only a child of that parent', () => {
    given([linked('p', 'x')]).when({ type: 'UnlinkChildren', parentId: 'p', childIds: ['x'] }).then([unlinked('p', 'x')]);
    given([linked('p', 'x')]).when({ type: 'UnlinkChildren', parentId: 'q', childIds: ['x'] }).thenThrows('failedPrecondition', /x is not a child of q/);
    given([]).when({ type: 'UnlinkChildren', parentId: 'p', childIds: ['x'] }).thenThrows('failedPrecondition', /not a child/);
  });

  it('a deleted identity leaves the graph with its parent link; refused while it has children; leaving twice decides nothing', () => {
    given([]).when({ type: 'LeaveGraph', identityId: 'x' }).then([left('x')]);
    given([linked('p', 'x')]).when({ type: 'LeaveGraph', identityId: 'x' }).then([left('x', 'p')]);
    given([linked('p', 'x')]).when({ type: 'LeaveGraph', identityId: 'p' }).thenThrows('failedPrecondition', /identity p has children; remove them first/);
    given([linked('p', 'x'), unlinked('p', 'x')]).when({ type: 'LeaveGraph', identityId: 'p' }).then([left('p')]);
    given([left('x')]).when({ type: 'LeaveGraph', identityId: 'x' }).then([]);
    // The parent of a child that left has no children any more.
    given([linked('p', 'x'), left('x', 'p')]).when({ type: 'LeaveGraph', identityId: 'p' }).then([left('p')]);
  });

  it('starts from the links made before it: recorded as its first event, with the first decision', () => {
    const before = [{ parentId: 'p', childId: 'x' }];
    given([], before).when({ type: 'LinkChildren', parentId: 'x', childIds: ['y'] }).then([seeded(before), linked('x', 'y')]);
    given([], before).when({ type: 'LinkChildren', parentId: 'q', childIds: ['x'] }).thenThrows('failedPrecondition', /already has parent p/);
    given([], before).when({ type: 'LinkChildren', parentId: 'x', childIds: ['p'] }).thenThrows('failedPrecondition', /cycle/);
    given([], before).when({ type: 'LeaveGraph', identityId: 'p' }).thenThrows('failedPrecondition', /has children/);
    given([], before).when({ type: 'UnlinkChildren', parentId: 'p', childIds: ['x'] }).then([seeded(before), unlinked('p', 'x')]);
    // A decision that changes nothing records nothing, not even the seed.
    given([], before).when({ type: 'LinkChildren', parentId: 'p', childIds: ['x'] }).then([]);
    // Once started, the links given are not the graph's concern: its stream already holds them.
    given([linked('q', 'y')], before).when({ type: 'LinkChildren', parentId: 'q', childIds: ['x'] }).then([linked('q', 'x')]);
    expect(() => identityGraphDecider.decide({ type: 'LeaveGraph', identityId: 'x', clientId, members, linksBefore: null, now },
      identityGraphDecider.initialState)).to.throw(/needs the links made before it/);
  });

  it('a cycle made before the graph had a stream can be undone, and the walk up over it ends', () => {
    const cycle = [{ parentId: 'x', childId: 'y' }, { parentId: 'y', childId: 'x' }];
    given([seeded(cycle)]).when({ type: 'LinkChildren', parentId: 'x', childIds: ['z'] }).then([linked('x', 'z')]);
    given([seeded(cycle)]).when({ type: 'LeaveGraph', identityId: 'x' }).thenThrows('failedPrecondition', /has children/);
    given([seeded(cycle)]).when({ type: 'UnlinkChildren', parentId: 'x', childIds: ['y'] }).then([unlinked('x', 'y')]);
  });

  it('whatever the sequence of decisions, no child has two parents and no identity is its own ancestor', () => {
    const ids = ['p', 'q', 'x', 'y', 'z'];
    const decision = fc.oneof(
      fc.record({ type: fc.constant('LinkChildren' as const), parentId: fc.constantFrom(...ids), childIds: fc.subarray(ids, { minLength: 1 }) }),
      fc.record({ type: fc.constant('UnlinkChildren' as const), parentId: fc.constantFrom(...ids), childIds: fc.subarray(ids, { minLength: 1 }) }),
      fc.record({ type: fc.constant('LeaveGraph' as const), identityId: fc.constantFrom(...ids) }),
    );
    fc.assert(fc.property(fc.array(decision, { maxLength: 40 }), (decisions) => {
      let state = identityGraphDecider.initialState;
      for (const d of decisions) {
        let events: IdentityGraphEvent[] = [];
        try {
          events = identityGraphDecider.decide({ ...d, clientId, members, linksBefore: state.started ? null : [], now } as IdentityGraphCommand, state);
        } catch {
          continue;
        }
        state = events.reduce(identityGraphDecider.evolve, state);
      }
      for (const [child, parent] of state.parentOf) {
        expect(state.left.has(child) || state.left.has(parent), `${child} → ${parent} links a departed identity`).to.equal(false);
        const seen = new Set<string>([child]);
        for (let id: string | undefined = parent; id !== undefined; id = state.parentOf.get(id)) {
          expect(seen.has(id), `cycle through ${id}`).to.equal(false);
          seen.add(id);
        }
      }
    }));
  });
});
