// Package ids makes every id Trellis mints, so each kind of id has one
// generator and one format. The formats are visible in the HTTP API and
// in stored data; do not change them.
//
//   - [New]: a record id (conversations, runs, messages, human requests):
//     a UUIDv7, unique across processes and increasing within one.
//   - [Sortable]: a checkpoint id, which sorts as a string in creation
//     order: 16 hex digits of Unix nanoseconds, strictly increasing
//     within the process, "-", 8 hex digits fixed per process.
//   - [Random]: an unguessable token after a prefix ("req_…", "el_…").
//
// Ids derived from content (a hash of their parts, so that the same input
// gives the same id) are not minted and live with what they identify.
package ids
