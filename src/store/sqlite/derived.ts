/**
 * The derived file: the usage rollups and their cursor, the object inventory and the last outbox row
 * it applied, and the rebuild counts, kept in a SQLite file of their own next to the events file
 * (`<events file>.derived`), written by the derived thread (derived-worker.ts) on its own connection,
 * so that a fold or an inventory catch-up never holds the events writer's lock or thread. The
 * inventory's outbox stays in the events file (written in the events' transaction): its rows above
 * the one recorded here are pending, those at or below it are deleted after the fact. Everything in it is
 * rebuilt from the events: a missing file is made empty (cursors at 0) and refilled by the catch-up,
 * and so is one that belongs to another events file or is ahead of this one (the events file restored
 * from an older backup).
 *
 * Connections that read both (readers, the main thread's, the derived thread's) attach the other file.
 * Table names are distinct across the two files, so unqualified names resolve to the one that has them.
 * The events writer never attaches it: a transaction that has written to both files would hold both.
 */
import { closeSync, existsSync, openSync, rmSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import type { Connection } from './connection.js';
import type { Migration } from '../types.js';
import { SHAPES } from '../../usage/shapes.js';
import { COARSE_SHAPES } from '../../inventory/shapes.js';
import { INVENTORY_ACTION_CODES } from '../../inventory/rows.js';
import { INVENTORY_MIGRATION_SQL } from './inventory.js';

/** The schema name the derived file is attached as (on the events' connections). */
export const DERIVED = 'derived';
/** The schema name the events file is attached as (on the derived thread's connection). */
export const EVENTS_DB = 'events_db';

export const derivedPath = (eventsPath: string): string => `${eventsPath}.derived`;

/** The tables moved out of the events file by migration 14, as the migrations before it left them. */
export const DERIVED_TABLES: readonly string[] = [
  ...SHAPES.map((shape) => shape.table),
  'inventory',
  'inventory_hours',
  ...COARSE_SHAPES.map((shape) => shape.table),
  'inventory_log',
  'rebuilds',
];

/** The derived file's own tables: the store it belongs to (its events file's secrets.store_id), and the cursors. */
const OWN_TABLES_SQL = [
  'CREATE TABLE derived_owner (store_id BLOB NOT NULL) STRICT',
  // usage_seq: the last event seq folded into the rollups; inventory_outbox_id: the last outbox row applied.
  'CREATE TABLE derived_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT, WITHOUT ROWID',
];

/**
 * The outbox again (migration 5's table), its ids never reused (AUTOINCREMENT): applied rows are deleted after the fact, and
 * a new row must never take an id at or below the last one applied (a plain rowid starts over at 1
 * once the table is empty).
 */
const OUTBOX_AUTOINCREMENT_SQL = `
${/CREATE TABLE inventory_outbox \([^;]*;/.exec(INVENTORY_MIGRATION_SQL)![0].replace('CREATE TABLE inventory_outbox', 'CREATE TABLE main.inventory_outbox_ids').replace('id INTEGER PRIMARY KEY,', 'id INTEGER PRIMARY KEY AUTOINCREMENT,')}
INSERT INTO main.inventory_outbox_ids (id, tenant, from_ts, first_seq, last_seq, at) SELECT id, tenant, from_ts, first_seq, last_seq, at FROM main.inventory_outbox;
DROP TABLE main.inventory_outbox;
ALTER TABLE main.inventory_outbox_ids RENAME TO inventory_outbox;`;

/**
 * For a derived file made afresh: one outbox row per tenant over all its inventory events (as
 * migration 7 made them), in place of any pending, so that the empty inventory is built from every
 * stored event, each applied once.
 */
const RESEED_OUTBOX_SQL = `DELETE FROM main.inventory_outbox;
INSERT INTO main.inventory_outbox (tenant, from_ts, first_seq, last_seq, at)
SELECT tenant, min(timestamp), min(seq), max(seq), unixepoch() FROM main.events WHERE action IN (${INVENTORY_ACTION_CODES.join(', ')}) GROUP BY tenant;`;

/**
 * The derived tables' DDL, qualified with `schema`: as the migrations before the move made them (run
 * on a scratch in-memory database), so the moved rows fit them column for column.
 */
export function derivedSchemaSql(before: readonly Migration[], schema: string): string {
  const scratch = new Database(':memory:');
  try {
    for (const step of before) scratch.exec(step.sql);
    const list = DERIVED_TABLES.map((t) => `'${t}'`).join(', ');
    const ddl = scratch.prepare(`SELECT sql FROM sqlite_master WHERE tbl_name IN (${list}) AND sql IS NOT NULL ORDER BY type = 'table' DESC, rowid`).pluck().all() as string[];
    return [...ddl, ...OWN_TABLES_SQL].map((sql) => `${sql.replace(/^CREATE (TABLE|INDEX|UNIQUE INDEX) /, `CREATE $1 ${schema}.`)};`).join('\n');
  } finally {
    scratch.close();
  }
}

/** Migration 14 (the derived file attached, empty): the derived tables and the usage cursor moved to it; the outbox's ids never reused. */
export function derivedMigrationSql(schemaSql: string): string {
  return `
INSERT INTO main.secrets (name, value) VALUES ('store_id', randomblob(16));
${schemaSql}
INSERT INTO ${DERIVED}.derived_owner (store_id) SELECT value FROM main.secrets WHERE name = 'store_id';
INSERT INTO ${DERIVED}.derived_counters (name, value) SELECT name, value FROM main.counters WHERE name = 'usage_seq';
DELETE FROM main.counters WHERE name = 'usage_seq';
-- Applied outbox rows were deleted: every row left is pending, those before the first were applied.
INSERT INTO ${DERIVED}.derived_counters (name, value) SELECT 'inventory_outbox_id', coalesce(min(id) - 1, 0) FROM main.inventory_outbox;
${DERIVED_TABLES.map((t) => `INSERT INTO ${DERIVED}.${t} SELECT * FROM main.${t};\nDROP TABLE main.${t};`).join('\n')}
${OUTBOX_AUTOINCREMENT_SQL}
`;
}

/** Attaches the derived file to a connection of the events file (read-only if the connection is). */
export function attachDerived(db: Connection, eventsPath: string): void {
  db.prepare(`ATTACH DATABASE ? AS ${DERIVED}`).run(derivedPath(eventsPath));
}

/** The events file's schema version (0: a new file). */
function schemaVersion(db: Connection): number {
  const has = db.prepare("SELECT count(*) FROM main.sqlite_master WHERE name = 'schema_migrations'").pluck().get() as number;
  return has === 0 ? 0 : (db.prepare('SELECT coalesce(max(version), 0) FROM main.schema_migrations').pluck().get() as number);
}

/**
 * Before the migrations, on the main connection (before any thread opens the files): attaches the
 * derived file, first removed if the events file is from before migration 14 (whatever is there is
 * left from a move a crash cut short, and the move starts over from an empty file).
 */
export function openDerived(db: Connection, eventsPath: string, moveVersion: number): void {
  const path = derivedPath(eventsPath);
  if (schemaVersion(db) < moveVersion) for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
  // The events file's mode (owner only, as made by the runtime): SQLite gives its WAL files the same.
  if (!existsSync(path)) closeSync(openSync(path, 'a', statSync(eventsPath).mode & 0o777));
  attachDerived(db, eventsPath);
  db.pragma(`${DERIVED}.journal_mode = WAL`);
}

/**
 * After the migrations: the derived file is kept if it belongs to this events file, is not ahead of
 * it (its usage cursor past the last seq, or its last outbox row applied past the last one made), and
 * the outbox rows it has not applied are all still there (an older copy than the events file may lack
 * rows purged since); else it is emptied and its cursors set to 0, so the catch-ups
 * refill it from the events. Returns whether it was kept.
 */
export function checkDerived(db: Connection, schemaSql: string): boolean {
  const kept = db.transaction((): boolean => {
    const owned = (db.prepare(`SELECT count(*) FROM ${DERIVED}.sqlite_master WHERE name = 'derived_owner'`).pluck().get() as number) === 1;
    if (!owned) return false;
    const same = db.prepare(`SELECT (SELECT store_id FROM ${DERIVED}.derived_owner) = (SELECT value FROM main.secrets WHERE name = 'store_id')`).pluck().get() === 1;
    const counter = (name: string) => db.prepare(`SELECT value FROM ${DERIVED}.derived_counters WHERE name = ?`).pluck().get(name) as number | undefined;
    const usageSeq = counter('usage_seq');
    const applied = counter('inventory_outbox_id');
    const eventSeq = db.prepare("SELECT value FROM main.counters WHERE name = 'event_seq'").pluck().get() as number;
    const lastOutboxRow = db.prepare("SELECT coalesce((SELECT seq FROM main.sqlite_sequence WHERE name = 'inventory_outbox'), 0)").pluck().get() as number;
    // Behind is fine while every outbox row past the last one it applied is still there: the purge deletes
    // rows this file applied, so rows it did not apply are gone when it is an older copy than the database.
    const firstOutboxRow = db.prepare('SELECT coalesce(min(id), ? + 1) FROM main.inventory_outbox').pluck().get(lastOutboxRow) as number;
    return same && usageSeq !== undefined && usageSeq <= eventSeq && applied !== undefined && applied <= lastOutboxRow && applied + 1 >= firstOutboxRow;
  });
  if (kept.immediate()) return true;
  // The outbox first, in a transaction of its own (a transaction over both files is not atomic across
  // them): a crash before the derived file is made afresh leaves it as it was, so both are done again.
  db.transaction(() => db.exec(RESEED_OUTBOX_SQL)).immediate();
  const reset = db.transaction((): void => {
    for (const table of db.prepare(`SELECT name FROM ${DERIVED}.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'`).pluck().all() as string[]) db.exec(`DROP TABLE ${DERIVED}."${table}"`);
    db.exec(schemaSql);
    db.exec(`INSERT INTO ${DERIVED}.derived_owner (store_id) SELECT value FROM main.secrets WHERE name = 'store_id';
INSERT INTO ${DERIVED}.derived_counters (name, value) VALUES ('usage_seq', 0);
-- The outbox just reseeded is all pending: the rows before it count as applied (none are left to apply).
INSERT INTO ${DERIVED}.derived_counters (name, value) SELECT 'inventory_outbox_id', coalesce(min(id) - 1, (SELECT coalesce(max(seq), 0) FROM main.sqlite_sequence WHERE name = 'inventory_outbox')) FROM main.inventory_outbox;`);
  });
  reset.immediate();
  return false;
}
