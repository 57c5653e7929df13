/** Brings a database to the newest schema version at open, applying only the steps it lacks. */
import type { Connection } from './connection.js';
import type { Migration } from './migrations.js';

export interface MigrationResult {
  /** Version before and after. */
  from: number;
  to: number;
}

export function migrate(db: Connection, migrations: readonly Migration[], now: () => number): MigrationResult {
  const latest = migrations.at(-1)?.version ?? 0;
  // IMMEDIATE: two processes opening a new database at once must not both apply the same step.
  const run = db.transaction((): MigrationResult => {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at INTEGER NOT NULL
    ) STRICT`);
    const current = (db.prepare('SELECT coalesce(max(version), 0) FROM schema_migrations').pluck().get() as number);
    if (current > latest) {
      throw new Error(`database schema version ${current} is newer than this bucketmeter knows (${latest}); upgrade bucketmeter`);
    }
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const step of migrations) {
      if (step.version <= current) continue;
      db.exec(step.sql);
      record.run(step.version, step.name, now());
    }
    return { from: current, to: latest };
  });
  return run.immediate();
}
