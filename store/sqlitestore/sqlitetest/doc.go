// Package sqlitetest gives tests a new SQLite record without migrating
// each one: under -race, migrating a new file costs more than a second of
// CPU, most of it SQLite parsing the whole schema again after each ALTER
// TABLE, and hundreds of tests start from a new database.
package sqlitetest
