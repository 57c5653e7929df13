/** Quarantine replay through the committer, on a real SQLite store: what it stores, keeps and reports. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createEventValidator } from '../../src/events/validate.js';
import { Committer } from '../../src/ingest/committer.js';
import { replayQuarantine } from '../../src/quarantine/replay.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { SqliteStore } from '../../src/store/sqlite/store.js';
import { minimalWireEvent, WIRE_NOW_SECONDS } from '../support/events.js';
import { tempDir } from '../support/server.js';
import { newTenant } from '../store/contract.js';

describe('quarantine replay', () => {
  let store: SqliteStore;
  let committer: Committer;
  before(async () => {
    store = await openSqliteStore({ path: join(tempDir(), 'replay.db') });
    committer = new Committer({ commit: (unit, deadline) => store.commit(unit, deadline), maxGroupEvents: 1000, maxQueueEvents: 10_000, maxInFlight: 2 });
  });
  after(async () => {
    await committer.close();
    await store.close();
  });

  it('splits a batch body by the ingestion rules: valid items stored, invalid ones kept anew and cut to the bound', async () => {
    const { tenantId } = await newTenant(store);
    const valid = minimalWireEvent('HeadBucket', { eventId: 'batch-valid' });
    const duplicate = minimalWireEvent('HeadBucket', { eventId: 'already-there' });
    const invalid = minimalWireEvent('HeadBucket', { bucket: 7, padding: 'x'.repeat(3000) });
    const validator = createEventValidator({ maxFutureSeconds: 900, maxExtraBytes: 8192 });
    // Stored before the replay: its copy in the batch is a duplicate.
    const first = validator.validate(duplicate, WIRE_NOW_SECONDS);
    assert.ok(first.ok);
    await store.commit({ events: [{ tenantId, receivedAt: WIRE_NOW_SECONDS, event: first.event }], quarantine: [] });
    // A whole batch body, kept (say) because the batch was over the size limit of the day.
    const body = Buffer.from(JSON.stringify([valid, duplicate, invalid]));
    await store.commit({ events: [], quarantine: [{ tenantId, receivedAt: WIRE_NOW_SECONDS, code: 'BM_ERR_BODY_TOO_LARGE', errors: [], source: 'POST /s3/batch', body, truncated: false }] });
    const [entry] = await store.quarantine.list({ tenantId, limit: 10, includeReplayed: false });

    const result = await replayQuarantine({ quarantine: store.quarantine, committer, validator, quarantineMaxBytes: 1024, tenantId, now: WIRE_NOW_SECONDS + 60 });
    // The entry the replay made for the invalid item comes after the others, so it is examined too, and still fails.
    assert.deepEqual(result, { examined: 2, replayed: 1, events: 1, duplicates: 1, stillInvalid: 1 });

    assert.equal((await store.quarantine.get(entry!.id))?.replayedAt, WIRE_NOW_SECONDS + 60);
    const kept = await store.quarantine.list({ tenantId, limit: 10, includeReplayed: false });
    assert.equal(kept.length, 1);
    assert.equal(kept[0]!.index, 2);
    assert.equal(kept[0]!.code, 'BM_ERR_EVENT_INVALID');
    assert.equal(kept[0]!.source, 'POST /s3/batch');
    assert.equal(kept[0]!.truncated, true);
    assert.equal(kept[0]!.body.length, 1024);
    const stored = (await store.listEvents(tenantId, { limit: 10 })).events.map((e) => e.eventId);
    assert.deepEqual(stored, ['batch-valid', 'already-there']);
  });
});
