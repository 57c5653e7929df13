/**
 * Cost pages asked again (CostService.pageText), on both real stores: the kept whole answer is found
 * before any month's groups are looked at, and the page's text (JSON or CSV, by format, cursor and
 * limit) is kept beside it and sent again as it was; a new event of the month makes the answer and
 * its text again, equal to a fresh service's; every page and format is the same slice a fresh
 * service writes; kept texts count against keptAnswerRows with the answers, and drop older ones.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CostService } from '../../src/costs/service.js';
import type { NormalizedEvent } from '../../src/events/catalogue.js';
import { loadPricing } from '../../src/pricing/setup.js';
import type { UsageRequest } from '../../src/usage/params.js';
import { getObject, newTenant } from '../store/contract.js';
import { openedBackends } from '../support/backends.js';
import type { OpenedStore } from '../support/backends.js';

const MARCH = Date.UTC(2026, 2, 1) / 1000;
const APRIL = Date.UTC(2026, 3, 1) / 1000;
const DAY = 86400;
const CUSTOMERS = 12;

/** March by the day per customer: each customer stores bytes from the 2nd on and reads some. */
const REQUEST: UsageRequest = { from: MARCH, to: APRIL, granularity: 'day', timeZone: 'UTC', groupBy: ['customerId'], filters: {}, format: 'json', limit: 100_000, storage: false };
/** The same rows, another answer (all of the events are aws's). */
const AWS: UsageRequest = { ...REQUEST, filters: { provider: ['aws'] } };

const BACKENDS = openedBackends('cost-pages');

for (const backend of BACKENDS) {
  describe(`cost: pages asked again (${backend.name})`, { skip: backend.skip }, () => {
    let opened: OpenedStore;
    let tenantId: number;
    const pricing = loadPricing({ prices: undefined, bucketPlans: undefined });
    const service = (keptAnswerRows?: number) =>
      new CostService({ usage: opened.store.usage, storage: opened.store.storageFeed, pricing, now: () => APRIL + 40 * DAY, ...(keptAnswerRows === undefined ? {} : { keptAnswerRows }) });
    const commit = (...events: NormalizedEvent[]) => opened.store.commit({ events: events.map((event) => ({ tenantId, receivedAt: APRIL + 30 * DAY, event })), quarantine: [] });
    /** The answer's rows: a whole answer's, and so each month's groups' (one month). */
    let rows: number;

    before(async () => {
      opened = await backend.open();
      ({ tenantId } = await newTenant(opened.store));
      const events: NormalizedEvent[] = [];
      for (let c = 0; c < CUSTOMERS; c++) {
        events.push({ action: 'PutObject', timestamp: MARCH + DAY + c, provider: 'aws', bucket: 'media', objectKey: `o${c}`, bytes: 1_000_000_000 + c, customerId: `c${c}` } as NormalizedEvent);
        for (let d = 0; d < 31; d += 3) events.push(getObject(MARCH + d * DAY + 3600 * c, { bucket: 'media', customerId: `c${c}`, bytes: 10_000 * (c + 1) }));
      }
      await commit(...events);
      rows = (await service().query(tenantId, REQUEST)).rows.length;
      assert.equal((await service().query(tenantId, AWS)).rows.length, rows, 'the filter keeps every row');
    });
    after(async () => {
      await opened.close();
    });

    it('asked again with nothing changed: the kept text, from the kept answer', async () => {
      const costs = service();
      const first = await costs.pageText(tenantId, REQUEST);
      assert.equal(first.text, (await service().pageText(tenantId, REQUEST)).text, "a fresh service's text");
      assert.equal(await costs.pageText(tenantId, REQUEST), first, 'the very text kept, not written again');
      const page = await costs.query(tenantId, REQUEST);
      assert.equal((await costs.query(tenantId, REQUEST)).rows[0], page.rows[0], 'the kept answer rows themselves, not made again');
    });

    it("with room for the answer only: found before its month's groups, so not made again; no text kept beside it", async () => {
      // The month's groups (as many as the answer's rows) are dropped to keep the answer: looked up
      // after them, they would be made again, and keeping them would drop the answer.
      const costs = service(rows);
      const first = await costs.query(tenantId, REQUEST);
      const again = await costs.query(tenantId, REQUEST);
      assert.equal(again.rows[0], first.rows[0], 'the kept answer');
      assert.deepEqual(again, await service().query(tenantId, REQUEST));
      const text = await costs.pageText(tenantId, REQUEST);
      const textAgain = await costs.pageText(tenantId, REQUEST);
      assert.notEqual(textAgain, text, 'written again: no room for it');
      assert.equal(textAgain.text, text.text);
      assert.equal((await costs.query(tenantId, REQUEST)).rows[0], first.rows[0], 'the answer still kept');
    });

    it('each cursor, limit and format its own text: the pages are the slices of the whole answer a fresh service writes', async () => {
      const costs = service();
      const whole = (JSON.parse((await costs.pageText(tenantId, REQUEST)).text) as { rows: unknown[] }).rows;
      assert.equal(whole.length, rows);
      for (const limit of [7, 50]) {
        const pages: string[] = [];
        let cursor: string | undefined;
        do {
          const request = { ...REQUEST, limit, ...(cursor === undefined ? {} : { cursor }) };
          const page = await costs.pageText(tenantId, request);
          assert.equal(await costs.pageText(tenantId, request), page, 'asked again: kept');
          assert.deepEqual(page, await service().pageText(tenantId, request), "a fresh service's page");
          const got = (JSON.parse(page.text) as { rows: unknown[] }).rows;
          assert.deepEqual(got, whole.slice(pages.length * limit, pages.length * limit + limit));
          pages.push(page.text);
          cursor = page.nextCursor ?? undefined;
        } while (cursor !== undefined);
        assert.equal(pages.length, Math.ceil(rows / limit));
      }
      for (const limit of [7, REQUEST.limit]) {
        const request = { ...REQUEST, format: 'csv' as const, limit };
        const csv = await costs.pageText(tenantId, request);
        assert.equal(csv.text, (await service().pageText(tenantId, request)).text, "a fresh service's CSV");
        assert.equal(csv.text.trimEnd().split('\r\n').length, 1 + Math.min(limit, rows));
        assert.equal(await costs.pageText(tenantId, request), csv);
      }
    });

    it('counts kept texts against keptAnswerRows: a text pushes the oldest answer out, and each answer stays right', async () => {
      // Room for one answer with its month's groups and another answer: not for a text beside them.
      const costs = service(3 * rows);
      const aws = await costs.query(tenantId, AWS);
      assert.equal((await costs.query(tenantId, AWS)).rows[0], aws.rows[0], 'kept');
      const text = await costs.pageText(tenantId, REQUEST);
      assert.equal(await costs.pageText(tenantId, REQUEST), text, 'the text kept, with its answer');
      const awsAgain = await costs.query(tenantId, AWS);
      assert.notEqual(awsAgain.rows[0], aws.rows[0], 'the oldest answer dropped for the text');
      assert.deepEqual(awsAgain, await service().query(tenantId, AWS));
      assert.equal((await costs.pageText(tenantId, REQUEST)).text, (await service().pageText(tenantId, REQUEST)).text);
    });

    // Last: its event adds a row to the answer the others count.
    it('a new event of the month: the answer and its text made again, with the event, as a fresh service makes them', async () => {
      const costs = service();
      const first = await costs.pageText(tenantId, REQUEST);
      const csv = await costs.pageText(tenantId, { ...REQUEST, format: 'csv' });
      await commit(getObject(MARCH + 20 * DAY, { bucket: 'media', customerId: 'late', bytes: 200_000_000_000 }));
      const again = await costs.pageText(tenantId, REQUEST);
      assert.notEqual(again.text, first.text);
      const fresh = await service().pageText(tenantId, REQUEST);
      assert.equal(again.text, fresh.text);
      const late = (JSON.parse(again.text) as { rows: { customerId: string; egressCost: string }[] }).rows.find((r) => r.customerId === 'late');
      assert.ok(late !== undefined && Number(late.egressCost) > 0, "the event's egress is priced in the answer");
      const csvAgain = await costs.pageText(tenantId, { ...REQUEST, format: 'csv' });
      assert.notEqual(csvAgain.text, csv.text);
      assert.equal(csvAgain.text, (await service().pageText(tenantId, { ...REQUEST, format: 'csv' })).text);
    });
  });
}
