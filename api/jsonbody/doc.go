// Package jsonbody decodes the native API's JSON request bodies
// strictly (Decode): the right Content-Type, one JSON value, no unknown
// fields, and only text the store can keep, each refusal an
// httperr.Problem in API.md's terms (415, 400 malformed_json,
// unknown_field, invalid_field, invalid_text) that says what to fix;
// and writes answers as JSON (Write). Package api and its endpoint
// packages decode every body they read, and write every JSON answer,
// through it; the protocol adapters, whose bodies their protocols shape,
// write their JSON answers through Write (A2A's, JSON-RPC's own, aside).
package jsonbody
