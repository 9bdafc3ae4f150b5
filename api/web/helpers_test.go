package web_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/trellis-ai/trellis/api/web/webtest"
)

// open starts a browser for the test and opens the page served by f.
func open(t *testing.T, f *contractFake) *webtest.Page {
	t.Helper()
	return webtest.Open(t, webtest.Browser(t), f.URL)
}

// jsonEqual fails the test unless got and want are the same JSON value.
func jsonEqual(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("%s: %q is not JSON: %v", what, got, err)
		return
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: the wanted %q is not JSON: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

// turn is the selector of the n-th turn of the transcript, from 1.
func turn(n int) string {
	return fmt.Sprintf("#transcript > li.turn:nth-of-type(%d)", n)
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
