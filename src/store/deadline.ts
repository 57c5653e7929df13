/**
 * A read's wait on derived-data work (a usage fold, an inventory catch-up) bounded by its deadline
 * (epoch ms): the work runs on either way, for the background job or the next read to finish.
 */
export function byDeadline<T>(work: Promise<T>, deadline: number, late: () => Error): Promise<T> {
  if (deadline === Number.POSITIVE_INFINITY) return work;
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), Math.max(0, deadline - Date.now()));
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
