// Package pgtest gives tests a PostgreSQL schema of their own on the
// database named by TRELLIS_TEST_DATABASE, so tests can run in parallel,
// commit freely, and leave nothing behind.
package pgtest
