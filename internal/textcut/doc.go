// Package textcut cuts text to a byte budget without splitting a UTF-8
// character: the one place the tool-result caps (operators), the code
// sandbox's output limit and the agent's context window (nodes) cut
// strings that are too long.
package textcut
