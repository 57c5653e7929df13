/** One problem with one field of an input, as reported to clients and kept in quarantine. */
export interface FieldError {
  /** JSON Pointer to the field (RFC 6901), e.g. `/deletedObjects/3/objectKey`; `` for the whole input. */
  path: string;
  /** What is wrong, in words a client developer can act on. */
  message: string;
  /** What was expected there, e.g. `string of at most 1024 bytes`. */
  expected: string;
  /** What came instead, summarised (type and a short excerpt), e.g. `number 12`. */
  received: string;
}
