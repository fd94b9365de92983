/**
 * Failpoints: named places in the code where a test can stop the process at an exact moment (after an append,
 * between two steps of a flow), so that what a crash or a lost database does there is tested deterministically
 * rather than by killing a busy process at a random time.
 *
 * A test facility, off unless the environment asks for it: `FAILPOINTS=name=action[,name=action…]`, read once
 * when this module loads. Unset, `failpoint()` is a lookup in an empty map. Actions:
 *   pause   write `failpoint <name> reached` on stdout and wait until the process receives SIGUSR2 (then go
 *           on), so the test can kill the process there, or stop the database and let it continue;
 *   crash   end the process at once with SIGKILL, as a power cut would.
 * A failpoint fires for every request that reaches it.
 */
type Action = 'pause' | 'crash';

const ACTIONS: ReadonlySet<string> = new Set(['pause', 'crash']);

function parse(spec: string | undefined): ReadonlyMap<string, Action> {
  const configured = new Map<string, Action>();
  for (const part of (spec ?? '').split(',')) {
    const item = part.trim();
    if (!item) continue;
    const at = item.lastIndexOf('=');
    const name = item.slice(0, at);
    const action = item.slice(at + 1);
    if (at <= 0 || !ACTIONS.has(action)) throw new Error(`FAILPOINTS: "${item}" is not name=pause or name=crash`);
    configured.set(name, action as Action);
  }
  return configured;
}

const configured = parse(process.env.FAILPOINTS);

/** Whether any failpoint is set (callers that would build a name first can skip it). */
export const failpointsEnabled = configured.size > 0;

let resumers: Array<() => void> = [];
if (failpointsEnabled) {
  process.on('SIGUSR2', () => {
    const waiting = resumers;
    resumers = [];
    for (const resume of waiting) resume();
  });
}

/** Does what `FAILPOINTS` says for `name`; nothing (and at once) when it names no such failpoint. */
export function failpoint(name: string): Promise<void> | undefined {
  const action = configured.get(name);
  if (action === undefined) return undefined;
  if (action === 'crash') process.kill(process.pid, 'SIGKILL');
  process.stdout.write(`failpoint ${name} reached\n`);
  return new Promise<void>((resolve) => { resumers.push(resolve); });
}
