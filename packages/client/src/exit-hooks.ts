/**
 * Drains a client when the process ends: on beforeExit (the event loop ran dry: the client's own
 * timers never hold it open) and on SIGTERM/SIGINT, after which the signal is raised again so the
 * process still ends as the signal asks, unless the application handles that signal itself.
 * process.exit() and crashes cannot wait for the network: use spoolDir to lose nothing then.
 */
interface Drainable {
  flush(): Promise<void>;
  close(options: { timeoutMs?: number }): Promise<unknown>;
}

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

export function installExitHooks(client: Drainable, timeoutMs: number): () => void {
  let drained = false;
  const onBeforeExit = () => {
    // Once only: a drain that timed out must not restart on the next beforeExit, for ever.
    if (drained) return;
    drained = true;
    void client.close({ timeoutMs });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    remove();
    void client.close({ timeoutMs }).finally(() => {
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  };
  const remove = () => {
    process.off('beforeExit', onBeforeExit);
    for (const signal of SIGNALS) process.off(signal, onSignal);
  };
  process.on('beforeExit', onBeforeExit);
  for (const signal of SIGNALS) process.on(signal, onSignal);
  return remove;
}
