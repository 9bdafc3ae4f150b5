// Package workspacetest is the conformance suite of package workspace:
// every pair of a record backend and a file store backend runs it.
package workspacetest
