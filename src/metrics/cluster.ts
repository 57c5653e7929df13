/**
 * Scraping under `serve --workers N`: the primary asks every worker for its metrics (prom-client's
 * AggregatorRegistry, over the cluster's IPC channel) and sums them, so one scrape sees the whole
 * node whichever worker or listener it reaches. A worker asked on the shared port forwards to the
 * primary. Without workers, the process's own registry is the answer.
 */
import cluster from 'node:cluster';
import type { Worker } from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { Metrics } from './metrics.js';

const ASK = 'bucketmeter:metrics-ask';
const ANSWER = 'bucketmeter:metrics-answer';
const ASK_TIMEOUT_MS = 10_000;

interface Ask {
  type: typeof ASK;
  id: number;
}
interface Answer {
  type: typeof ANSWER;
  id: number;
  text?: string;
  error?: string;
}

export const METRICS_CONTENT_TYPE = AggregatorRegistry.PROMETHEUS_CONTENT_TYPE;

/** In the primary: the summed metrics of every worker, and the answer to workers that forward a scrape. */
export function clusterScraper(): () => Promise<string> {
  const aggregator = new AggregatorRegistry();
  const scrape = () => aggregator.clusterMetrics();
  cluster.on('message', (worker: Worker, message: Ask) => {
    if (message?.type !== ASK) return;
    scrape().then(
      (text) => worker.send({ type: ANSWER, id: message.id, text } satisfies Answer),
      (error: Error) => worker.send({ type: ANSWER, id: message.id, error: error.message } satisfies Answer),
    );
  });
  return scrape;
}

/** In a serving process: what a scrape of this process answers (the whole cluster's, in a worker). */
export function processScraper(metrics: Metrics): () => Promise<string> {
  if (!cluster.isWorker) return () => metrics.registry.metrics();
  // The primary's AggregatorRegistry asks each worker for the registries named here.
  AggregatorRegistry.setRegistries([metrics.registry]);
  let next = 0;
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        process.off('message', onMessage);
        reject(new Error(`the primary did not answer within ${ASK_TIMEOUT_MS} ms`));
      }, ASK_TIMEOUT_MS);
      const onMessage = (message: Answer) => {
        if (message?.type !== ANSWER || message.id !== id) return;
        clearTimeout(timer);
        process.off('message', onMessage);
        if (message.text !== undefined) resolve(message.text);
        else reject(new Error(`metrics of the cluster: ${message.error}`));
      };
      process.on('message', onMessage);
      process.send!({ type: ASK, id } satisfies Ask);
    });
}
