/**
 * The SQLite schema, as numbered steps. A step, once released, is never edited: change the schema by
 * appending a step. migrate.ts applies the steps newer than the database's version at open.
 */

import type { Migration } from '../types.js';
import { DROP_SHAPES_MIGRATION_SQL } from '../../usage/shapes.js';
import { wideShapesMigrationSql } from '../../inventory/shapes.js';
import { USAGE_CURSOR_MIGRATION_SQL, WIDE_USAGE_MIGRATION_SQL, usageMigrationSql, usageShapesMigrationSql } from './usage-sql.js';
import { derivedMigrationSql, derivedSchemaSql, DERIVED } from './derived.js';
import { INVENTORY_ENDED_MIGRATION_SQL, INVENTORY_LOG_MIGRATION_SQL, INVENTORY_MIGRATION_SQL, INVENTORY_SHAPES_MIGRATION_SQL } from './inventory.js';

export type { Migration };

/** The steps before the derived data moved to a file of its own (migration 14). */
const BEFORE_DERIVED: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
CREATE TABLE tenants (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  tenant_id INTEGER NOT NULL REFERENCES tenants (id),
  hash BLOB NOT NULL UNIQUE,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
) STRICT;

-- One dictionary for every dictionary-encoded field (row.ts DICT_FIELDS). Rows are never deleted or
-- changed, so an id, once committed, means the same value for ever (readers and the writer cache it).
CREATE TABLE dict (
  id INTEGER PRIMARY KEY,
  value TEXT NOT NULL UNIQUE
) STRICT;

-- Object keys, each stored once; events.object_key holds the id. The id is a hash of the key (see
-- object-keys.ts), so lookups go by rowid and the table needs no index on value. Never changed or deleted.
CREATE TABLE object_keys (
  id INTEGER PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

-- Named counters. event_seq is the last event seq handed out: seqs come from here, not from max(rowid),
-- so deleting the newest events can never make a server event id be reused.
CREATE TABLE counters (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO counters (name, value) VALUES ('event_seq', 0);

-- seq is the arrival order and the rowid. received_after is received_at - timestamp: usually a few
-- seconds, so one or two bytes where an epoch takes four (bytes per event is what this table is about).
-- Column order: typed columns of row.ts, then the client eventId and the JSON rest (both usually NULL).
CREATE TABLE events (
  seq INTEGER PRIMARY KEY,
  tenant INTEGER NOT NULL,
  timestamp INTEGER NOT NULL,
  received_after INTEGER NOT NULL,
  action INTEGER NOT NULL,
  provider INTEGER NOT NULL,
  customer INTEGER,
  feature INTEGER,
  client_type INTEGER,
  client_id INTEGER,
  bucket INTEGER,
  object_category INTEGER,
  object_key INTEGER,
  version_id TEXT,
  upload_id TEXT,
  bytes INTEGER,
  part_number INTEGER,
  billable INTEGER,
  event_id TEXT,
  rest TEXT
) STRICT;

CREATE INDEX events_tenant_time ON events (tenant, timestamp);
-- Partial: events without a customer cost nothing here, and "customer = ?" implies the WHERE.
CREATE INDEX events_tenant_customer_time ON events (tenant, customer, timestamp) WHERE customer IS NOT NULL;
-- Exactly-once for client event ids, for as long as the events are kept; server-id rows are not indexed.
CREATE UNIQUE INDEX events_tenant_event_id ON events (tenant, event_id) WHERE event_id IS NOT NULL;

-- AUTOINCREMENT: quarantine ids are handed to operators and replay tools, and purging the newest
-- entries must not let an id be reused.
CREATE TABLE quarantine (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  code TEXT NOT NULL,
  errors TEXT NOT NULL,
  source TEXT NOT NULL,
  batch_index INTEGER,
  body BLOB NOT NULL,
  truncated INTEGER NOT NULL,
  replayed_at INTEGER
) STRICT;

CREATE INDEX quarantine_tenant ON quarantine (tenant, id);
CREATE INDEX quarantine_received ON quarantine (received_at);
`,
  },
  {
    version: 2,
    name: 'no per-customer event index',
    // Every event landed on a random leaf page of this index (one insertion point per customer), so
    // each commit rewrote one page per event or so: ~1.3 KB of WAL per event, half the writer's time,
    // and more as the table grew. A time range with a customer filter reads events_tenant_time;
    // usage per customer belongs in aggregates, not in a per-event index.
    sql: 'DROP INDEX events_tenant_customer_time;',
  },
  {
    version: 3,
    name: 'tenant isolation: keyed object-key hash, per-tenant server ids, per-tenant access path',
    sql: `
-- Per-database random secrets, made here and never changed: the object-key hash key (object-keys.ts;
-- a hash anyone can compute lets a tenant send keys that all collide) and the cursor key (cursor.ts).
CREATE TABLE secrets (
  name TEXT PRIMARY KEY,
  value BLOB NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO secrets (name, value) VALUES ('object_key_hash', randomblob(16)), ('cursor', randomblob(32));

-- Server event ids are numbered per tenant (events.tseq), so that an id tells a tenant nothing of the
-- others' traffic. Rows stored before keep their ids (tseq NULL: the id is their seq); each existing
-- tenant's numbering starts above every seq handed out so far, so its ids stay in arrival order.
CREATE TABLE tenant_seqs (
  tenant INTEGER PRIMARY KEY,
  value INTEGER NOT NULL
) STRICT;
INSERT INTO tenant_seqs (tenant, value) SELECT id, (SELECT value FROM counters WHERE name = 'event_seq') FROM tenants;
ALTER TABLE events ADD COLUMN tseq INTEGER;

-- (tenant, seq): a tenant's listing reads that tenant's rows only. Each insert appends at its tenant's
-- end of the index, so it costs one page per tenant per commit, not a random page per event.
CREATE INDEX events_tenant_seq ON events (tenant);
`,
  },
  {
    version: 4,
    name: 'key scopes, usage rollups and receipts',
    // Generated from usage/shapes.ts: a change to the shapes needs a new step, not an edit of this one.
    sql: usageMigrationSql(),
  },
  {
    version: 5,
    name: 'object inventory, its hourly deltas and outbox',
    sql: INVENTORY_MIGRATION_SQL,
  },
  {
    version: 6,
    name: 'usage rollups folded after commit, from a cursor',
    sql: USAGE_CURSOR_MIGRATION_SQL,
  },
  {
    version: 7,
    name: 'per-key inventory log',
    sql: INVENTORY_LOG_MIGRATION_SQL,
  },
  {
    version: 8,
    name: 'narrow and UTC-day usage rollup shapes',
    sql: usageShapesMigrationSql(),
  },
  {
    version: 9,
    name: 'inventory entries by key and end',
    sql: INVENTORY_ENDED_MIGRATION_SQL,
  },
  {
    version: 10,
    name: 'coarse inventory delta shapes, hourly and per UTC day',
    sql: INVENTORY_SHAPES_MIGRATION_SQL,
  },
  {
    version: 11,
    name: 'rebuilds counted per tenant',
    // A rebuild rewrites rollups or the inventory without adding an event (DataVersion.rebuilds).
    // Tenant 0 counts the rebuilds of every tenant (tenant ids start at 1). A row per kind of rebuild:
    // on PostgreSQL usage and inventory rebuilds hold locks of their own, and two at once moving one
    // row in their REPEATABLE READ transactions would fail one with a serialization error.
    sql: `
CREATE TABLE rebuilds (
  tenant INTEGER NOT NULL,
  kind TEXT NOT NULL,
  generation INTEGER NOT NULL,
  PRIMARY KEY (tenant, kind)
) STRICT, WITHOUT ROWID;
`,
  },
  {
    version: 12,
    name: 'byte sums wide: high parts of the rollups\' and delta shapes\' byte sums',
    // Sums of bytes passed 2^63 (146 events of the largest size in an hour, 2^19 in a rollup row, a
    // petabyte held for months in a read), and the store refused them, stopping every tenant (store/wide.ts).
    sql: `${WIDE_USAGE_MIGRATION_SQL}\n${wideShapesMigrationSql('INTEGER')}`,
  },
  {
    version: 13,
    name: 'no hourly usage rollups by bucket, client or feature: those queries read the events',
    // usage_fine and usage_customer held about a row per event of the reference mix: they cost the
    // fold most of its time and a read nothing over the events (README "Rollups: shapes and why").
    sql: DROP_SHAPES_MIGRATION_SQL,
  },
];

/** The derived file's schema, for a file made afresh (derived.ts checkDerived) and by migration 14. */
export const DERIVED_SCHEMA_SQL = derivedSchemaSql(BEFORE_DERIVED, DERIVED);

/** The step that moves the derived data to the derived file (derived.ts). */
export const DERIVED_MOVE_VERSION = 14;

export const MIGRATIONS: readonly Migration[] = [
  ...BEFORE_DERIVED,
  {
    version: DERIVED_MOVE_VERSION,
    name: 'usage rollups, object inventory and rebuild counts moved to the derived file',
    // Folds and inventory catch-ups then write a file of their own, on a thread of their own: commits never wait behind them.
    sql: derivedMigrationSql(DERIVED_SCHEMA_SQL),
  },
];
