// Package cognition is what the agent knows of each user across
// conversations, and of itself: seed 002's "System 3".
//
//   - Theory of mind: a profile per user (expertise, communication style,
//     interests, interaction patterns, explicit preferences) inferred from
//     signals in the user's messages, read clause by clause; what the user
//     states outright ("I prefer short answers", "I live in Lisbon", PATCH
//     /me/profile) wins over inference.
//   - Episodic memory: of each turn, a memory {summary, outcome, topics,
//     importance, access count, created, last accessed}. A new memory whose
//     topics are similar enough to an old one's (Jaccard ≥ 0.7) merges into
//     it; with a model configured, an Extractor decides add / update /
//     delete / nothing against the nearest memories instead, so a changed
//     fact replaces the old one. Pruning keeps at most 100 a user, drops
//     those unused for 90 days, least important first, as a periodic job.
//     Recall ranks by full-text relevance, importance and recency.
//   - Identity and self-monitoring: the agent's answers, tool calls, tool
//     failures, blocked runs and rejected tool calls per tool, and a
//     confidence score per answer, summed in the record.
//
// Service.Context loads it for a request within a hard budget (100 ms by
// default); Service.LearnLater asks for the conversation's learning job
// on the durable queue (internal/jobs) and returns at once: one job, a
// pause after the turn, learns every turn of the conversation not
// learned yet, as the record holds them (store.Memories.UnlearnedTurns),
// together: what Learn would learn of each, written once (the profile,
// each memory the turns change, the stats, how far it learned), in one
// transaction (store.Memories.Learn), so a job that dies part-way and
// runs again counts nothing twice. The rows live in the record
// (store.Memories).
//
// The package knows nothing of the agent's graph: cmd/trellis adapts the
// agent's hooks to LearnLater.
package cognition
