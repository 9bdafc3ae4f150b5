// Package testcheck holds what the conformance suites (store/storetest,
// documents/workspace/workspacetest, graph/checkpoint/checkpointtest)
// share: running their cases, and the checks they make alike, so that
// each suite states its cases and not its plumbing.
package testcheck
