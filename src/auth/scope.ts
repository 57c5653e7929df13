/** Which key scope a route needs: one rule, read by the auth hook and by the OpenAPI document. */
import type { KeyScope } from '../store/types.js';

/** /v1/* reads what was stored (cost data among it); everything else with a key sends events. */
export function scopeNeeded(routeUrl: string): Exclude<KeyScope, 'all'> {
  return routeUrl.startsWith('/v1/') ? 'read' : 'ingest';
}

export function scopeAllows(scope: KeyScope, needed: Exclude<KeyScope, 'all'>): boolean {
  return scope === 'all' || scope === needed;
}
