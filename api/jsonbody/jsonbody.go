package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/store"
)

// Text a body may not hold: the store keeps only valid UTF-8 without NUL
// characters (store.ValidText), the same on every backend, so a request
// holding other text is refused whole before anything is stored.
var (
	errNotUTF8 = httperr.New(http.StatusBadRequest, "invalid_text", "the body is not valid UTF-8; send JSON text encoded as UTF-8")
	errNUL     = httperr.New(http.StatusBadRequest, "invalid_text", `a string in the body holds a NUL character (\u0000), which cannot be stored; remove it`)
)

// Decode reads r's body into v strictly: Content-Type application/json
// (415 otherwise), at most the body limit (413), one JSON value with no
// unknown fields (400), and text the store can keep: valid UTF-8 with no
// NUL in any string, nested objects' included (400 invalid_text). Its
// refusals are *httperr.Problem, but an over-long body's, which is the
// *http.MaxBytesError that httperr.Of answers 413.
func Decode(r *http.Request, v any) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return httperr.New(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as JSON with Content-Type: application/json")
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return decodeError(err)
	}
	// encoding/json would quietly replace bytes that are not UTF-8, and
	// json.RawMessage fields would keep them.
	if !utf8.Valid(body) {
		return errNotUTF8
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return decodeError(err)
		}
		return httperr.New(http.StatusBadRequest, "malformed_json", "the body must hold exactly one JSON value")
	}
	return checkStrings(body)
}

// checkStrings returns errNUL when a string of body, a valid JSON value,
// holds a NUL. JSON can only hold one escaped, so a body without the
// escape needs no closer look.
func checkStrings(body []byte) error {
	if !bytes.Contains(body, []byte(`\u0000`)) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF: body was decoded whole before
		}
		if s, ok := tok.(string); ok && !store.ValidText(s) {
			return errNUL
		}
	}
}

func decodeError(err error) error {
	var (
		tooBig *http.MaxBytesError
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooBig):
		return err
	case errors.Is(err, io.EOF):
		return httperr.New(http.StatusBadRequest, "malformed_json", "the body is empty; send a JSON object")
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return httperr.New(http.StatusBadRequest, "malformed_json", "the body is not valid JSON: "+err.Error())
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return httperr.New(http.StatusBadRequest, "malformed_json", "the body must be a JSON object")
		}
		return httperr.New(http.StatusBadRequest, "invalid_field", fmt.Sprintf("field %q must be a JSON %s", field, jsonKind(typ.Type.Kind().String())))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return httperr.New(http.StatusBadRequest, "unknown_field", "unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field ")+"; see API.md for the fields this endpoint takes")
	}
	return httperr.New(http.StatusBadRequest, "malformed_json", "the body cannot be read as JSON: "+err.Error())
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "slice", "array":
		return "array"
	case "struct", "map":
		return "object"
	case "bool":
		return "boolean"
	}
	return "number"
}

// Write answers v as JSON with status.
func Write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"error":{"code":"internal_error","message":"the response could not be encoded"}}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
