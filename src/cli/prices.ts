/** `bucketmeter prices list | show ID`: the plans a node would price with, after --prices. */
import type { Pricing } from '../pricing/setup.js';
import { planIdFor } from '../pricing/assignment.js';

export function pricesCommand(pricing: Pricing, sub: string | undefined, id: string | undefined, print: (head: string[], rows: string[][]) => void): number {
  const { book, assignment } = pricing;
  switch (sub) {
    case 'list': {
      const rows = [...book.plans.values()].flatMap((versions) =>
        versions.map((v) => [v.id, v.provider, v.validFrom ?? '-', v.asOf, v.storage.metering, v.currency, book.defaults.get(v.provider) === v.id ? 'default' : '-']),
      );
      print(['PLAN', 'PROVIDER', 'VALID FROM', 'AS OF', 'METERING', 'CURRENCY', 'DEFAULT'], rows);
      const named = [
        ...Object.keys(assignment.buckets).map((b) => [`bucket ${b}`, assignment.buckets[b]!]),
        ...Object.keys(assignment.providers).map((p) => [`provider ${p}`, planIdFor(book, assignment, p, null)!]),
      ];
      if (named.length > 0) {
        process.stdout.write('\n');
        print(['ASSIGNED', 'PLAN'], named);
      }
      return 0;
    }
    case 'show': {
      const versions = id === undefined ? undefined : book.plans.get(id);
      if (versions === undefined) {
        process.stderr.write(`no price plan "${id ?? ''}" (see bucketmeter prices list)\n`);
        return 1;
      }
      process.stdout.write(JSON.stringify(versions, null, 2) + '\n');
      return 0;
    }
    default:
      return -1;
  }
}
