// Package langgraph serves a subset of the LangGraph Agent Server API
// over Trellis' run service, so that the LangGraph SDK
// (@langchain/langgraph-sdk: Client, useStream) and apps built on it,
// such as agent-chat-ui, work against Trellis unchanged.
//
// It owns the translation only: a thread is a Trellis conversation
// (thread_id is the conversation id, its metadata the conversation's),
// a run is a Trellis run, a thread's state and history are the agent's
// checkpoints, and a run's events (package events' vocabulary) become
// the stream modes values, updates, messages-tuple, messages, events and
// custom. A thinking model's reasoning streams in the messages modes
// (and events) as message chunks of their own whose content is a
// LangChain reasoning content block ({type: "reasoning", reasoning}), one
// message per node's model call; the thread's messages keep only the
// answer. An approval the agent waits for is an interrupt in the shape of
// LangChain's HumanInTheLoopMiddleware, answered by a new run carrying
// command.resume.decisions. A run's multitask_strategy is the run
// service's (runs.Multitask): a message enqueued behind the thread's run
// is a pending run until it starts. Runs start, stop, resume and are followed,
// and threads, runs and checkpoints are read, only through runs' verbs:
// the package imports neither store nor nodes. Users and their
// isolation come from package api's authentication (runs.UserFrom).
//
// Mounted by package api at /langgraph:
//
//	const client = new Client({apiUrl: "http://localhost:8080/langgraph"});
package langgraph
