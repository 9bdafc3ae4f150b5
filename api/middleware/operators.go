package middleware

import (
	"net/http"
	"slices"

	"github.com/trellis-ai/trellis/api/httperr"
	"github.com/trellis-ai/trellis/runs"
)

// Operators lets through only requests of the users named in admins,
// as Authenticate named them; the others get 403 forbidden. It goes
// after Authenticate, on the routes that show what spans every user.
func Operators(admins []string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !slices.Contains(admins, runs.UserFrom(r.Context())) {
				httperr.Write(w, httperr.Forbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
