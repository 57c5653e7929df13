/**
 * Loaded before every test file (scripts/run-tests.mjs, --import): a failed property says why, not
 * only its counterexample (fast-check 4 otherwise keeps the error as the report's cause, which the
 * test runner does not print).
 */
import fc from 'fast-check';

fc.configureGlobal({ includeErrorInReport: true });
