// Package sse writes Server-Sent Events responses, for every stream
// Trellis serves: the native API's run streams, and the client-protocol
// adapters' (LangGraph, AG-UI, the AI SDK, OpenAI), which differ only in
// what they put in the frames. A Writer sends the headers once, then
// frames (optional id, optional event name, one data line) and comments,
// each flushed at once under a write deadline of its own: the server's
// WriteTimeout, meant for short responses, does not apply to a stream,
// and a client that takes nothing for the deadline is dropped.
package sse
