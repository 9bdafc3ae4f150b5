// Package jsonbody decodes the native API's JSON request bodies
// strictly (Decode): the right Content-Type, one JSON value, no unknown
// fields, and only text the store can keep, each refusal an
// httperr.Problem in API.md's terms (415, 400 malformed_json,
// unknown_field, invalid_field, invalid_text) that says what to fix.
// Package api decodes every body it reads through it.
package jsonbody
