export { SqliteStore, openSqliteStore } from './store.js';
export type { ConnectionSettings, SqliteStoreOptions } from './store.js';
