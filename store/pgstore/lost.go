package pgstore

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Lost reports whether err, from this store or from anything else using
// pgx on the same database (the checkpoint saver), says that the
// connection to the database was lost or could not be made: the server
// ended the session (an error of severity FATAL or PANIC, such as
// pg_terminate_backend's or a server shutting down, or a connection
// exception, class 08), the connection broke or was closed under the
// call, or no connection could be opened. What failed so may succeed once
// the database is back: the pool opens new connections on demand. Other
// errors, the caller's context ending among them, would fail the same way
// again, and Lost reports false for them, as for the failures of HTTP
// calls (*url.Error), which are not the database's even when a
// connection broke.
func (s *Store) Lost(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if _, ok := errors.AsType[*url.Error](err); ok {
		return false // an HTTP call's (a model's, a tool's), never pgx's
	}
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok {
		severity := cmp.Or(pe.SeverityUnlocalized, pe.Severity)
		return severity == "FATAL" || severity == "PANIC" || strings.HasPrefix(pe.Code, "08")
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	// pgconn's "conn closed": the request was never sent, as the
	// connection was found closed.
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) || pgconn.SafeToRetry(err)
}
