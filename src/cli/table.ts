/** Tables on a terminal: columns padded to their widest cell; control characters from data escaped. */
import { terminalSafe } from './terminal-safe.js';

export function printTable(head: string[], unsafeRows: string[][]): void {
  const rows = unsafeRows.map((row) => row.map(terminalSafe));
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  process.stdout.write([line(head), ...rows.map(line)].join('\n') + '\n');
}
