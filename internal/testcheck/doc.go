// Package testcheck holds the two checks the conformance suites
// (store/storetest, documents/workspace/workspacetest) share, so that
// each suite states its cases and not its plumbing.
package testcheck
