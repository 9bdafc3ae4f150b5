// Package memtools gives the agent its memory tools: remember (store a
// fact the user asked it to remember) and recall (search what is
// remembered), local tools scoped to the user of the call, so a call
// never reads or writes another user's memories.
package memtools
