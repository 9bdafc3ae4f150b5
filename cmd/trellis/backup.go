package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/trellis-ai/trellis/internal/sqlopen"
)

// The embedded default's databases, in its data directory.
var databases = []string{"trellis.db", "checkpoints.db", "jobs.db"}

// manifestName is the file a backup describes itself in; restore reads
// it to know the directory is a whole backup.
const manifestName = "trellis-backup.json"

// manifestFormat is the layout of a backup directory, raised when it
// changes so an older restore refuses what it cannot read.
const manifestFormat = 1

// manifest describes a backup.
type manifest struct {
	Format    int       `json:"format"`
	CreatedAt time.Time `json:"created_at"`
	Version   string    `json:"version"`
	Databases []string  `json:"databases"`
	// Documents counts the document files copied, in documents/.
	Documents      int   `json:"documents"`
	DocumentsBytes int64 `json:"documents_bytes"`
}

// dirFlags are the flags that name the embedded default's directories,
// as serve takes them.
type dirFlags struct {
	data, documents string
}

func (d *dirFlags) add(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&d.data, "data-dir", envOr(getenv, "TRELLIS_DATA_DIR", defaultDataDir(getenv)), "`directory` of the SQLite databases (env TRELLIS_DATA_DIR)")
	fs.StringVar(&d.documents, "documents-dir", getenv("TRELLIS_DOCUMENTS_DIR"), "`directory` of the documents' files (env TRELLIS_DOCUMENTS_DIR); default <data dir>/documents")
}

// recordFlags say where the record a command opens beside the server
// is: the SQLite data directory, or the PostgreSQL database at
// DATABASE_URL.
type recordFlags struct {
	dirFlags
	databaseURL string
}

func (d *recordFlags) add(fs *flag.FlagSet, getenv func(string) string) {
	d.dirFlags.add(fs, getenv)
	fs.StringVar(&d.databaseURL, "database-url", getenv("DATABASE_URL"), "PostgreSQL `URL`; when set, used instead of SQLite (env DATABASE_URL)")
}

func (d *dirFlags) documentsDir() string {
	if d.documents != "" {
		return d.documents
	}
	return documentsDefaultDir(d.data)
}

// parseDirVerb parses a backup or restore command line: the directory
// flags and one directory argument.
func parseDirVerb(verb, use, what string, args []string, sys stdio) (dirFlags, string, error) {
	var d dirFlags
	fs := newFlags(verb, fmt.Sprintf("Usage: trellis %s [flags] %s\n\n%s\n\nFlags:\n", verb, use, what), sys)
	d.add(fs, sys.getenv)
	if err := parseFlags(fs, args); err != nil {
		return d, "", err
	}
	if fs.NArg() != 1 {
		return d, "", usageError{fmt.Errorf("%s: want one directory, %s", verb, use)}
	}
	if sys.getenv("DATABASE_URL") != "" {
		return d, "", usageError{fmt.Errorf("%s: DATABASE_URL is set: on PostgreSQL, back up the database with pg_dump and the document files where they are kept (README, Backup)", verb)}
	}
	return d, fs.Arg(0), nil
}

// runBackup copies the embedded default's databases and document files
// into a new directory while the server may be running: the databases as
// of one instant (sqlopen.Backup), then the files. Restoring it is like
// restarting after a crash at that instant. A document deleted while the
// backup runs may be in the copy without its file; one uploaded meanwhile
// may have its file in the copy without its record, which nothing reads.
// The backup is written beside DEST and renamed into place once whole, so
// a failed one leaves nothing at DEST.
func runBackup(ctx context.Context, args []string, sys stdio) error {
	d, dest, err := parseDirVerb("backup", "DEST", "Copies the embedded default's databases and document files into the new directory DEST, while the server runs.", args, sys)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backup: %s exists; name a new directory", dest)
	}
	if _, err := os.Stat(filepath.Join(d.data, databases[0])); err != nil {
		return fmt.Errorf("backup: no Trellis database in %s: %w", d.data, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dest)), "."+filepath.Base(dest)+".partial-")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	defer os.RemoveAll(tmp)
	m := manifest{Format: manifestFormat, CreatedAt: time.Now().UTC(), Version: version()}
	var copies []sqlopen.Copy
	for _, name := range databases {
		from := filepath.Join(d.data, name)
		if _, err := os.Stat(from); errors.Is(err, os.ErrNotExist) {
			continue // a server that never queued a job has no jobs.db
		}
		copies = append(copies, sqlopen.Copy{From: from, To: filepath.Join(tmp, name)})
		m.Databases = append(m.Databases, name)
	}
	if err := sqlopen.Backup(ctx, copies); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if m.Documents, m.DocumentsBytes, err = copyTree(d.documentsDir(), filepath.Join(tmp, "documents")); err != nil {
		return fmt.Errorf("backup: documents: %w", err)
	}
	if err := writeManifest(tmp, m); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(tmp, dest); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(sys.out, "trellis backup: %s · %d databases · %d document files (%d bytes)\n", dest, len(m.Databases), m.Documents, m.DocumentsBytes)
	return nil
}

// runRestore copies a backup into a data directory that holds no
// database yet (and its documents into the documents directory), after
// checking every database of the backup.
func runRestore(ctx context.Context, args []string, sys stdio) error {
	d, src, err := parseDirVerb("restore", "BACKUP", "Copies the backup directory BACKUP into a new data directory, for trellis serve to start on.", args, sys)
	if err != nil {
		return err
	}
	m, err := readManifest(src)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	for _, name := range m.Databases {
		if err := sqlopen.Check(ctx, filepath.Join(src, name)); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
	}
	for _, name := range databases {
		if _, err := os.Stat(filepath.Join(d.data, name)); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("restore: %s already holds %s; restore into a new data directory", d.data, name)
		}
	}
	if entries, err := os.ReadDir(d.documentsDir()); err == nil && len(entries) > 0 {
		return fmt.Errorf("restore: %s is not empty; restore into a new documents directory", d.documentsDir())
	}
	if err := restoreFiles(src, d, m); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	fmt.Fprintf(sys.out, "trellis restore: %s (backed up %s) into %s · %d databases · %d document files\n",
		src, m.CreatedAt.Format(time.RFC3339), d.data, len(m.Databases), m.Documents)
	return nil
}

// restoreFiles copies the backup's databases and documents into d's
// directories and, if it fails, removes what it wrote, so that the
// restore can be run again.
func restoreFiles(src string, d dirFlags, m manifest) (err error) {
	var wrote []string
	defer func() {
		if err != nil {
			for _, p := range wrote {
				os.RemoveAll(p)
			}
		}
	}()
	if err := os.MkdirAll(d.data, 0o700); err != nil {
		return err
	}
	for _, name := range m.Databases {
		to := filepath.Join(d.data, name)
		wrote = append(wrote, to)
		if _, err := copyFile(filepath.Join(src, name), to); err != nil {
			return err
		}
	}
	if _, err := os.Stat(d.documentsDir()); errors.Is(err, os.ErrNotExist) {
		wrote = append(wrote, d.documentsDir())
	}
	if _, _, err := copyTree(filepath.Join(src, "documents"), d.documentsDir()); err != nil {
		return fmt.Errorf("documents: %w", err)
	}
	return nil
}

func writeManifest(dir string, m manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, manifestName), append(b, '\n'), 0o600)
}

func readManifest(dir string) (manifest, error) {
	var m manifest
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return m, fmt.Errorf("%s is not a Trellis backup: %w", dir, err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", manifestName, err)
	}
	if m.Format != manifestFormat {
		return m, fmt.Errorf("%s: format %d, this trellis reads %d", manifestName, m.Format, manifestFormat)
	}
	if len(m.Databases) == 0 || m.Databases[0] != databases[0] {
		return m, fmt.Errorf("%s: the backup holds no %s", manifestName, databases[0])
	}
	for _, name := range m.Databases {
		// "." and ".." are their own base names but name directories:
		// restoring one would copy over the data directory or its parent.
		if filepath.Base(name) != name || name == "." || name == ".." {
			return m, fmt.Errorf("%s: database %q is not a file name", manifestName, name)
		}
	}
	return m, nil
}

// copyTree copies the regular files under from into to, keeping their
// paths and owner-only permissions, and returns how many and their bytes.
// A missing from copies nothing.
func copyTree(from, to string) (int, int64, error) {
	var n int
	var size int64
	err := filepath.WalkDir(from, func(path string, e fs.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) && path == from {
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		case !e.Type().IsRegular():
			return nil
		}
		b, err := copyFile(path, filepath.Join(to, rel))
		if errors.Is(err, os.ErrNotExist) {
			return nil // deleted since the walk listed it
		}
		n, size = n+1, size+b
		return err
	})
	return n, size, err
}

// copyFile copies one file to a new file and syncs it.
func copyFile(from, to string) (int64, error) {
	in, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}
