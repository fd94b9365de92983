/** The machine's Chromium (Debian's `chromium`), which the browser tests drive; null when it is not installed. */
import { execFileSync } from 'node:child_process';

export function installedChromium(): string | null {
  try {
    return execFileSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim() || null;
  } catch {
    // `command -v` exits non-zero when there is none: the browser tests are then skipped, saying why.
    return null;
  }
}
