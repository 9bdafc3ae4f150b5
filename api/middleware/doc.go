// Package middleware holds the API's HTTP middleware that needs nothing
// of the server: each is a plain func(http.Handler) http.Handler (or
// returns one), one per file, as chi's are. Package api installs them.
//
// Its writer wrapper implements Unwrap, so http.ResponseController
// reaches Flush and SetWriteDeadline underneath for the SSE streams.
package middleware
