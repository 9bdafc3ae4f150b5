// Package workspace is the agent's own files: what it lists, reads,
// writes and edits as it works, kept beside the documents and in the
// same file store.
//
// # Scopes
//
// A file lives in one of three scopes ([Kind]): a conversation's (the
// default of the tools), a user's (across all their conversations), or
// a project's (a small named group of users, see [Workspaces.CreateProject];
// a conversation attached to a project reaches it as its "project"
// scope). Every method of [Workspaces] takes the acting user and checks
// access first: a conversation scope is its owner's, a user scope its
// user's, a project scope its members'. Anyone else gets [ErrNotFound],
// as for a file that does not exist.
//
// # Files, versions and bytes
//
// Paths are checked by [CheckPath] (UTF-8, relative, no "." or ".."
// or empty segments, at most [MaxPathBytes] long and [MaxPathDepth]
// deep, no control characters). The record (store.Workspaces) keeps
// each file's current version and every earlier one; the bytes of each
// version are an object of their own in the documents' Storage
// (filesystem, S3-compatible or PostgreSQL, sealed at rest when that
// Storage is documents.Encrypted), under the key prefix of the scope's
// owner: documents.ConversationPrefix or documents.UserPrefix followed by
// "workspace/", or [ProjectPrefix]. So deleting a conversation or erasing
// a user, which delete those prefixes, delete its files' bytes too.
//
// Every write, edit, append and restore makes a new version; none is changed
// afterwards, and a restore points at the old version's object rather
// than copying it. Delete removes a file with its whole history, rows
// and objects: a deleted file frees its share of the quota, and a file
// written again at its path starts at version 1. An empty file has no
// object (Storage holds no empty ones).
//
// Quotas ([Limits]) bound each scope's bytes, every version counted, and
// its number of files, and each file's size; the record checks the scope
// in the transaction that adds the version ([ErrQuota], [ErrTooLarge]).
//
// # Tools
//
// [Tools] makes the agent's file tools — ls, read_file, write_file,
// edit_file, delete_file, glob, grep — for the one tool provider; they
// act for the user and conversation of the call. Those that change a
// file preview the change as a unified diff for its approval
// (operators.Previewer), and put file.changed on the run's stream.
// With ToolConfig.Index, index_file copies a text file into the
// conversation's documents (the documents' upload path), so the document
// tools search and cite it; with ToolConfig.Document, read_file reads a
// text document of the conversation by its id. [Workspaces.SandboxFiles]
// gives the run_code sandbox the conversation's files, and
// [Workspaces.CodeTool] makes run_code over them.
package workspace
