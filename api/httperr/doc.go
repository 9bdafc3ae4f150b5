// Package httperr is the one HTTP meaning of the service's errors: the
// run service's refusals, the record's and the agent's sentinels, each
// as a status, a snake_case code and a message that says how to go on. The native API (package api) answers them in
// API.md's error shape, and each protocol adapter in its protocol's, so
// a busy run, another user's thread or a lost database mean the same on
// every surface. DecodeBody is how every adapter refuses a body it
// cannot decode.
package httperr
