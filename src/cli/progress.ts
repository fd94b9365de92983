/**
 * Progress of a long command, always on stderr: stdout carries the command's result alone, so it can be piped.
 * - On a terminal: a cli-progress bar, redrawn in place, with the rate and the time left.
 * - Elsewhere (a CI log, a test reading stderr): a plain line at most once per PLAIN_LINE_INTERVAL_MS, and a
 *   final one when the phase ends.
 * - With --quiet: nothing.
 */
import cliProgress from 'cli-progress';

/** How often, at most, a plain progress line is written where stderr is not a terminal. */
export const PLAIN_LINE_INTERVAL_MS = 1_000;
/** How often, at most, the bar on a terminal is redrawn, per second. */
const BAR_REDRAWS_PER_SECOND = 10;

export interface Progress {
  /** Begins a phase (ending the one before): `total` units to do, null when not known beforehand. */
  start(label: string, total: number | null, unit?: string): void;
  /** `n` more units done. A total turned out too small grows with the work. */
  advance(n: number): void;
  /** Ends the phase (done or failed): the bar's last state stays on the terminal; elsewhere a final line. */
  stop(): void;
  /** Ends the phase as done: what was done was all there was (a total foreseen too large shrinks to it). */
  complete(): void;
}

interface Phase {
  label: string;
  unit: string;
  total: number | null;
  done: number;
  startedAt: number;
  lastLineAt: number;
  bar: cliProgress.SingleBar | null;
}

function perSecond(phase: Phase): number {
  const seconds = (Date.now() - phase.startedAt) / 1000;
  return seconds > 0 ? phase.done / seconds : 0;
}

function count(n: number): string {
  return Math.round(n).toLocaleString('en');
}

/** "12 s", "3 min 5 s": the time left at the average rate so far. */
function timeLeft(phase: Phase): string {
  const rate = perSecond(phase);
  if (phase.total === null || rate === 0) return '?';
  const seconds = Math.ceil(Math.max(0, phase.total - phase.done) / rate);
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

function plainLine(phase: Phase, final: boolean): string {
  const done = phase.total === null ? `${count(phase.done)} ${phase.unit}` : `${count(phase.done)}/${count(phase.total)} ${phase.unit}`;
  const percent = phase.total ? ` (${Math.floor((100 * phase.done) / phase.total)}%)` : '';
  // The final line is also written when the phase failed: it says how far it went, not that it finished.
  const tail = final ? `${((Date.now() - phase.startedAt) / 1000).toFixed(1)} s elapsed` : `${timeLeft(phase)} left`;
  return `${phase.label}: ${done}${percent}, ${count(perSecond(phase))} ${phase.unit}/s, ${tail}\n`;
}

function startBar(phase: Phase): cliProgress.SingleBar {
  const known = phase.total !== null;
  const bar = new cliProgress.SingleBar({
    stream: process.stderr,
    format: known
      ? '{label} {bar} {percentage}% | {done}/{all} {unit} | {rate} {unit}/s | {left} left'
      : '{label} {done} {unit} | {rate} {unit}/s | {duration_formatted}',
    fps: BAR_REDRAWS_PER_SECOND,
    hideCursor: true,
    // A bar that stopped early (an error) leaves the terminal's cursor as it found it.
    gracefulExit: true,
  }, cliProgress.Presets.shades_classic);
  // Without a total the bar's own value stays 0 of 1: the payload's counts tell the progress.
  bar.start(phase.total ?? 1, 0, payload(phase));
  return bar;
}

function redraw(phase: Phase, bar: cliProgress.SingleBar): void {
  if (phase.total === null) bar.update(payload(phase));
  else bar.update(phase.done, payload(phase));
}

function payload(phase: Phase): Record<string, string> {
  return { label: phase.label, unit: phase.unit, done: count(phase.done), all: count(phase.total ?? 0),
    rate: count(perSecond(phase)), left: timeLeft(phase) };
}

export function progressOnStderr(options: { quiet: boolean }): Progress {
  const terminal = process.stderr.isTTY === true;
  let phase: Phase | null = null;
  const stop = () => {
    if (!phase) return;
    if (phase.bar) {
      redraw(phase, phase.bar);
      phase.bar.stop();
    } else {
      process.stderr.write(plainLine(phase, true));
    }
    phase = null;
  };
  return {
    start(label, total, unit = 'events') {
      stop();
      if (options.quiet) return;
      const now = Date.now();
      phase = { label, unit, total, done: 0, startedAt: now, lastLineAt: now, bar: null };
      if (terminal) phase.bar = startBar(phase);
    },
    advance(n) {
      if (!phase) return;
      phase.done += n;
      if (phase.total !== null && phase.done > phase.total) {
        phase.total = phase.done;
        phase.bar?.setTotal(phase.total);
      }
      if (phase.bar) {
        redraw(phase, phase.bar);
      } else if (Date.now() - phase.lastLineAt >= PLAIN_LINE_INTERVAL_MS) {
        phase.lastLineAt = Date.now();
        process.stderr.write(plainLine(phase, false));
      }
    },
    stop,
    complete() {
      if (phase && phase.total !== null) {
        phase.total = phase.done;
        phase.bar?.setTotal(phase.total);
      }
      stop();
    },
  };
}
