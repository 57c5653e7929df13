export { SqliteStore, openSqliteStore } from './store.js';
export type { ConnectionSettings } from './connection.js';
export type { SqliteStoreOptions } from './store.js';
