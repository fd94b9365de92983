/**
 * Polls a condition until it holds; fails, naming `what`, when it has not held by the deadline. A bound for
 * something that must happen eventually (a projector catching up, a lease moving), never a timing assertion.
 */
export async function until(
  condition: () => Promise<boolean> | boolean,
  options: { what?: string; timeoutMs?: number; intervalMs?: number } = {},
): Promise<void> {
  const { what = 'condition', timeoutMs = 30_000, intervalMs = 10 } = options;
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
