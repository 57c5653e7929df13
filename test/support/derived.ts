/** SQLite stores as they were before migration 14 moved the derived data to the derived file. */
import type { Database } from 'better-sqlite3';
import { DERIVED_TABLES, derivedPath } from '../../src/store/sqlite/derived.js';
import { APPLIED_OUTBOX_ROW } from '../../src/store/sqlite/inventory.js';

/**
 * The derived tables (and the usage cursor) moved back into the events file of a closed store, the
 * applied outbox rows deleted as schema 13 did, and the schema version back to 13: so that the
 * steps before 14 can be undone by hand, or migration 14 run again. The derived file is left as it
 * is: a store of a schema before 14 ignores it (the move starts over from an empty one).
 */
export function moveDerivedBack(db: Database, path: string): void {
  db.prepare('ATTACH DATABASE ? AS derived').run(derivedPath(path));
  db.transaction(() => {
    for (const t of DERIVED_TABLES) {
      const ddl = db.prepare("SELECT sql FROM derived.sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL ORDER BY type = 'table' DESC").pluck().all(t) as string[];
      for (const sql of ddl) db.exec(sql);
      db.exec(`INSERT INTO main.${t} SELECT * FROM derived.${t}`);
    }
    db.exec(`INSERT INTO main.counters (name, value) SELECT name, value FROM derived.derived_counters WHERE name = 'usage_seq';
      DELETE FROM main.inventory_outbox WHERE id <= ${APPLIED_OUTBOX_ROW.replace('derived_counters', 'derived.derived_counters')};
      DELETE FROM main.secrets WHERE name = 'store_id';
      DELETE FROM main.schema_migrations WHERE version >= 14;`);
  })();
  db.exec('DETACH DATABASE derived');
}
