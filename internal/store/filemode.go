package store

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// fileMode is the mode of the SQLite store's files: the database holds every
// message and the secrets sealed with the key beside it (mode 0600 too), so
// only the service's own user may read it.
const fileMode fs.FileMode = 0o600

// storeFiles are the files of the SQLite database at path: the database, its
// write-ahead log and its shared-memory index.
func storeFiles(path string) []string {
	return []string{path, path + "-wal", path + "-shm"}
}

// secureFiles makes the database file 0600 before SQLite opens it, and
// tightens those of its files that exist and allow more to 0600 (a store made
// by an earlier version, or copied in with another umask). SQLite gives the
// WAL and shared-memory files it creates the database file's mode, so a new
// store's files are all 0600 from the start; openSQLite calls it again once
// the WAL is open, in case a SQLite build did otherwise.
func secureFiles(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return fmt.Errorf("open the database file: %w", err)
	}
	f.Close()
	for _, p := range storeFiles(path) {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("check the mode of %s: %w", p, err)
		}
		if st.Mode().Perm()&^fileMode == 0 {
			continue
		}
		if err := os.Chmod(p, st.Mode().Perm()&fileMode); err != nil {
			return fmt.Errorf("tighten the mode of %s: %w", p, err)
		}
		slog.Info("Tightened the mode of a store file to 0600", "file", p, "was", fmt.Sprintf("%04o", st.Mode().Perm()))
	}
	return nil
}
