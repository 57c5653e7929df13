/** siphash24 1.3.1 ships no types: the one call bucketmeter makes. */
declare module 'siphash24' {
  /** SipHash-2-4 of `data` under a 16-byte `key`, written into `out` (8 bytes), which is returned. */
  function siphash24(data: Uint8Array, key: Uint8Array, out?: Uint8Array, noAssert?: boolean): Uint8Array;
  export default siphash24;
}
