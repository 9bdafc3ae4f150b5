// Package pgfiles is documents.Storage in a table of the PostgreSQL
// database the service already uses: the default on PostgreSQL when no
// bucket or shared directory is configured, so every process sharing the
// database reads the files the others stored without any other setting.
// Objects are small (the upload limit, 1 MB by default), which a bytea
// column holds well; each is one row, written and read by one statement.
//
// New migrates the table found on the pool's search_path, so one database
// can hold several independent stores in separate schemas.
package pgfiles
