package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// decode reads r's body into v strictly: Content-Type application/json
// (415 otherwise), at most the body limit (413), one JSON value with no
// unknown fields (400).
func decode(r *http.Request, v any) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as JSON with Content-Type: application/json")
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return decodeError(err)
		}
		return errorf(http.StatusBadRequest, "malformed_json", "the body must hold exactly one JSON value")
	}
	return nil
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
		return errorf(http.StatusBadRequest, "malformed_json", "the body is empty; send a JSON object")
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, "malformed_json", "the body is not valid JSON: "+err.Error())
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return errorf(http.StatusBadRequest, "malformed_json", "the body must be a JSON object")
		}
		return errorf(http.StatusBadRequest, "invalid_field", fmt.Sprintf("field %q must be a JSON %s", field, jsonKind(typ.Type.Kind().String())))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errorf(http.StatusBadRequest, "unknown_field", "unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field ")+"; see API.md for the fields this endpoint takes")
	}
	return errorf(http.StatusBadRequest, "malformed_json", "the body cannot be read as JSON: "+err.Error())
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
