/** Retries `check` until it passes or `timeoutMs` runs out (then throws its last failure). */
export async function eventually(check: () => Promise<void> | void, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > end) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}
