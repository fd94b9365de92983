/**
 * Failpoints: named places in the code where a test can stop, slow or kill the process, to show what a process
 * that dies (or stalls) exactly there leaves behind, and that the service finishes it. A test facility only:
 * `FAILPOINTS` is read once, when this module loads; unset (always, outside tests), `failpoint()` is one lookup in
 * an empty map and returns at once, so a failpoint costs nothing in production.
 *
 *   FAILPOINTS='checkout.afterReservation=pause'                 one point
 *   FAILPOINTS='a=crash;b=sleep(5000)'                           several, `;`-separated
 *
 * Actions: `pause` writes `failpoint <name> reached` on stdout and never returns (the test then kills the process
 * at a known point); `crash` writes the same line and kills the process with SIGKILL (no shutdown, no cleanup, as a
 * lost machine); `sleep(<ms>)` writes the line and returns after that many milliseconds (at most 600,000), as a
 * process that stalled there and then went on.
 */

type Action = { kind: 'pause' } | { kind: 'crash' } | { kind: 'sleep'; ms: number };

/** The longest `sleep(<ms>)`, in milliseconds: a stall a test waits out, not a hang. */
const MAX_SLEEP_MS = 600_000;

export class FailpointsConfigError extends Error {
  override readonly name = 'FailpointsConfigError';
}

function actionOf(name: string, text: string): Action {
  if (text === 'pause' || text === 'crash') return { kind: text };
  const sleep = /^sleep\((\d{1,6})\)$/.exec(text);
  if (sleep && Number(sleep[1]) <= MAX_SLEEP_MS) return { kind: 'sleep', ms: Number(sleep[1]) };
  throw new FailpointsConfigError(`FAILPOINTS: ${name}=${text}: the action must be pause, crash or sleep(<ms>) with ms at most ${MAX_SLEEP_MS}`);
}

/** `name=action;name=action`; an empty or unset variable configures nothing. */
export function parseFailpoints(text: string | undefined): ReadonlyMap<string, Action> {
  const points = new Map<string, Action>();
  for (const entry of (text ?? '').split(';').map((part) => part.trim()).filter(Boolean)) {
    const match = /^([A-Za-z0-9_.-]{1,100})=(.+)$/.exec(entry);
    if (!match) throw new FailpointsConfigError(`FAILPOINTS: ${JSON.stringify(entry)} is not <name>=<action>`);
    points.set(match[1]!, actionOf(match[1]!, match[2]!.trim()));
  }
  return points;
}

const configured = parseFailpoints(process.env.FAILPOINTS);

/** Does what FAILPOINTS configures for `name`; nothing (at once) when it configures nothing for it. */
export async function failpoint(name: string): Promise<void> {
  const action = configured.get(name);
  if (action === undefined) return;
  process.stdout.write(`failpoint ${name} reached\n`);
  switch (action.kind) {
    case 'crash':
      process.kill(process.pid, 'SIGKILL');
      return new Promise<void>(() => {});
    case 'pause':
      // Never settles: the process waits here until the test kills it.
      return new Promise<void>(() => {});
    case 'sleep':
      await new Promise((resolve) => setTimeout(resolve, action.ms));
  }
}
