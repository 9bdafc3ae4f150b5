// Package postgres stores graph checkpoints in PostgreSQL through pgx; it
// owns the schema, its migrations and the SQL, and turns pgx errors into
// graph errors so that no package above it imports pgx or pgconn.
//
// The layout is LangGraph's: one row per checkpoint, each field version
// stored once per thread namespace and shared by every checkpoint naming
// it, and pending writes keyed by checkpoint, task and index. Put is a
// single statement, and so atomic without a transaction round trip; Get
// reads a field's delta chain in one recursive query.
//
// New migrates the schema found on the pool's search_path, so one database
// can hold several independent stores in separate schemas.
package postgres
