/** The cost thread's heap (--cost-heap-mb): as set, else half of the machine's memory, never below Node's own limit. */
import assert from 'node:assert/strict';
import { totalmem } from 'node:os';
import { describe, it } from 'node:test';
import { getHeapStatistics } from 'node:v8';
import { costHeap, memoryLimit } from '../../src/costs/thread.js';

describe('cost thread heap', () => {
  it('is the setting when given, else half of the machine and at least this process own limit', () => {
    assert.equal(costHeap(1234), 1234);
    const auto = costHeap(0);
    assert.ok(auto >= Math.floor(totalmem() / 2 / 2 ** 20), `${auto} MB is at least half of the machine`);
    assert.ok(auto >= Math.floor(getHeapStatistics().heap_size_limit / 2 ** 20), `${auto} MB is at least Node's own limit`);
  });

  it("is half of the memory it is given (a container's limit where lower than the machine), at least Node's own limit", () => {
    const own = Math.floor(getHeapStatistics().heap_size_limit / 2 ** 20);
    assert.equal(costHeap(0, 256 * 2 ** 30), 128 * 1024);
    assert.equal(costHeap(0, 2 ** 30), Math.max(own, 512));
    assert.ok(memoryLimit() <= totalmem());
  });
});
