package sqlopen

import (
	"context"
	"database/sql/driver"
	"errors"
)

// CachedStatements is how many prepared statements a connection keeps
// for queries run by their text (DB.ExecContext and QueryContext, also
// in a transaction): more than the chat store's seventy-odd queries,
// which may all run on one connection, so the busy ones stay prepared;
// a bound, because some query texts are built for their number of
// arguments.
const CachedStatements = 128

// cachingConnector makes connections that keep the statements of the
// queries run on them by text. modernc's driver parses such a query anew
// on every call, and for River's job insert, a statement of several
// hundred characters, parsing costs several times running it.
type cachingConnector struct{ driver.Connector }

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := dc.(innerConn)
	if !ok {
		dc.Close()
		return nil, errors.New("sqlopen: the sqlite driver's connection lacks the context methods")
	}
	return &cachingConn{innerConn: inner, stmts: make(map[string]*cachedStmt)}, nil
}

// innerConn is what cachingConn needs of the driver's connection, and
// forwards: database/sql uses each of these when the connection has it.
type innerConn interface {
	driver.Conn
	driver.ConnPrepareContext
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachingConn is one connection and its statement cache. database/sql
// uses a connection from one goroutine at a time, so nothing here locks.
type cachingConn struct {
	innerConn
	stmts map[string]*cachedStmt
	clock uint64 // counts uses, for the least recently used
}

type cachedStmt struct {
	st interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}
	used uint64
	// open: rows of this statement are being read. Running it again
	// would reset it under them, so the query runs unprepared instead.
	open bool
}

// ExecContext runs query through its cached statement. A query without
// arguments (a migration's script, a pragma) runs as it is: such
// queries are run once, and a script is several statements.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s := c.stmt(ctx, query, args)
	if s == nil {
		return c.innerConn.ExecContext(ctx, query, args)
	}
	return s.st.ExecContext(ctx, args)
}

// QueryContext is ExecContext for a query that returns rows; the
// statement is marked open until they are closed.
func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s := c.stmt(ctx, query, args)
	if s == nil {
		return c.innerConn.QueryContext(ctx, query, args)
	}
	rows, err := s.st.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	s.open = true
	if typed, ok := rows.(rowsOf); ok {
		return &cachedRows{rowsOf: typed, s: s}, nil
	}
	return &cachedPlainRows{Rows: rows, s: s}, nil
}

// stmt returns query's statement, prepared now if it is not cached, or
// nil when the query should run unprepared: it has no arguments, its
// statement is open, or it cannot be prepared (running it reports why).
func (c *cachingConn) stmt(ctx context.Context, query string, args []driver.NamedValue) *cachedStmt {
	if len(args) == 0 {
		return nil
	}
	c.clock++
	if s, ok := c.stmts[query]; ok {
		if s.open {
			return nil
		}
		s.used = c.clock
		return s
	}
	ds, err := c.innerConn.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	st, ok := ds.(interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	})
	if !ok {
		ds.Close()
		return nil
	}
	if len(c.stmts) >= CachedStatements {
		c.evict()
	}
	s := &cachedStmt{st: st, used: c.clock}
	c.stmts[query] = s
	return s
}

// evict closes the least recently used statement that is not open.
func (c *cachingConn) evict() {
	var (
		oldest string
		min    uint64
	)
	for q, s := range c.stmts {
		if !s.open && (oldest == "" || s.used < min) {
			oldest, min = q, s.used
		}
	}
	if oldest != "" {
		c.stmts[oldest].st.Close()
		delete(c.stmts, oldest)
	}
}

// Close finalizes the cached statements, then closes the connection.
// database/sql has closed every rows of it by then.
func (c *cachingConn) Close() error {
	for q, s := range c.stmts {
		s.st.Close()
		delete(c.stmts, q)
	}
	return c.innerConn.Close()
}

// rowsOf is the driver's rows with the column type methods that
// database/sql's ColumnTypes reads; cachedRows keeps them visible.
type rowsOf interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// cachedRows are the rows of a cached statement, which is free again
// once they are closed (the driver resets it then).
type cachedRows struct {
	rowsOf
	s *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.rowsOf.Close()
	r.s.open = false
	return err
}

// cachedPlainRows is cachedRows for a driver whose rows lack the column
// type methods.
type cachedPlainRows struct {
	driver.Rows
	s *cachedStmt
}

func (r *cachedPlainRows) Close() error {
	err := r.Rows.Close()
	r.s.open = false
	return err
}
