/** What ingestion answers, as schemas (the HTTP replies are declared with them) and the types they give. */
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { FIELD_ERROR } from '../events/field-error.js';

export const SINGLE_RESULT = Type.Object({
  eventId: Type.String({ description: "the client's eventId, or the server-assigned one" }),
  duplicate: Type.Boolean({ description: 'an event with this eventId was already stored: not stored again' }),
});

export const BATCH_RESULT = Type.Object({
  accepted: Type.Integer({ description: 'events stored by this request' }),
  duplicates: Type.Integer({ description: 'events whose eventId was already stored' }),
  rejected: Type.Array(Type.Object({ index: Type.Integer(), errors: Type.Array(FIELD_ERROR) }), {
    description: 'the first --batch-reply-max-rejected invalid events, by index (all are kept in quarantine)',
  }),
  rejectedCount: Type.Integer({ description: 'every rejected event, detailed or not' }),
});

export type SingleResult = Static<typeof SINGLE_RESULT>;
export type BatchResult = Static<typeof BATCH_RESULT>;
