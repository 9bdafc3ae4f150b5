package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/trellis-ai/trellis/api/middleware"
	"github.com/trellis-ai/trellis/store"
	"github.com/trellis-ai/trellis/store/pgstore"
	"github.com/trellis-ai/trellis/store/sqlitestore"
)

// keysUsage is trellis keys' help.
const keysUsage = `Usage:
  trellis keys create --user USER [--name NAME]
  trellis keys list [--user USER]
  trellis keys revoke ID

Issues, lists and revokes API keys in the record the server reads (the
SQLite data directory, or DATABASE_URL): no restart is needed, and a
revoked key stops working on every process within seconds. A key is
shown once, when created; only its hash is kept. The server checks them
when it authenticates (TRELLIS_AUTH=keys, or TRELLIS_API_KEYS set).

Flags:
`

// runKeys is trellis keys: create, list or revoke.
func runKeys(ctx context.Context, args []string, sys stdio) error {
	fs := newFlags("keys", keysUsage, sys)
	var d recordFlags
	d.add(fs, sys.getenv)
	user := fs.String("user", "", "the `user` a key authenticates as (create), or whose keys to list")
	name := fs.String("name", "", "a `name` to tell the key by (create)")
	if len(args) == 0 {
		fs.Usage()
		return usageError{errors.New("keys: want create, list or revoke")}
	}
	verb := args[0]
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	switch {
	case verb != "create" && verb != "list" && verb != "revoke":
		return usageError{fmt.Errorf("keys: unknown verb %q: want create, list or revoke", verb)}
	case verb == "create" && *user == "":
		return usageError{errors.New("keys create: --user is required")}
	case verb == "revoke" && fs.NArg() != 1:
		return usageError{errors.New("keys revoke: want the id of one key")}
	case verb != "revoke" && fs.NArg() != 0:
		return usageError{fmt.Errorf("keys %s: unexpected arguments %q", verb, fs.Args())}
	}
	rec, closeRec, err := openKeys(ctx, d.data, d.databaseURL)
	if err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	defer closeRec()
	switch verb {
	case "create":
		key, hash, shown := middleware.NewKey()
		k, err := rec.CreateKey(ctx, store.NewKey{UserID: *user, Name: *name, Hash: hash, Prefix: shown})
		if err != nil {
			return fmt.Errorf("keys create: %w", err)
		}
		fmt.Fprintf(sys.out, "%s\n", string(key))
		fmt.Fprintf(sys.err, "key %s for user %s: shown this once; keep it secret\n", k.ID, k.UserID)
	case "list":
		return listKeys(ctx, rec, *user, sys)
	case "revoke":
		k, err := rec.RevokeKey(ctx, fs.Arg(0))
		if err != nil {
			return fmt.Errorf("keys revoke: %w", err)
		}
		fmt.Fprintf(sys.out, "revoked %s (%s…, user %s)\n", k.ID, k.Prefix, k.UserID)
	}
	return nil
}

func listKeys(ctx context.Context, rec store.Keys, user string, sys stdio) error {
	tw := tabwriter.NewWriter(sys.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKEY\tUSER\tNAME\tCREATED\tREVOKED")
	for page := (store.Page{Limit: store.MaxLimit}); ; {
		p, err := rec.ListKeys(ctx, user, page)
		if err != nil {
			return fmt.Errorf("keys list: %w", err)
		}
		for _, k := range p.Keys {
			revoked := "-"
			if k.RevokedAt != nil {
				revoked = k.RevokedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s…\t%s\t%s\t%s\t%s\n", k.ID, k.Prefix, k.UserID, k.Name, k.CreatedAt.Format(time.RFC3339), revoked)
		}
		if page.Cursor = p.NextCursor; page.Cursor == "" {
			break
		}
	}
	return tw.Flush()
}

// openKeys opens the record serve reads: PostgreSQL at dbURL, else the
// SQLite database in dataDir, which must exist (a typo'd directory
// would otherwise take keys no server reads).
func openKeys(ctx context.Context, dataDir, dbURL string) (store.Keys, func(), error) {
	if dbURL != "" {
		st, err := pgstore.Open(ctx, dbURL)
		if err != nil {
			return nil, nil, err
		}
		return st, st.Close, nil
	}
	if _, err := os.Stat(dataDir); err != nil {
		return nil, nil, fmt.Errorf("data directory: %w (start trellis serve once to make it)", err)
	}
	st, err := sqlitestore.Open(ctx, filepath.Join(dataDir, databases[0]))
	if err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
}
