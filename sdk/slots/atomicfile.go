package slots

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// writeFileAtomic replaces path with data, so a reader sees the old file or
// the new one, never a partial write, even across a crash: it writes a
// temporary file (mode 0600) in the same directory, syncs it, renames it
// over path and syncs the directory.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := fsync(f); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename or a file creation in dir durable. Windows has no
// directory handles to sync; NTFS journals the metadata itself.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := fsync(d); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// fsync flushes f to stable storage. It is a variable so tests, which
// simulate crashes by abandoning open files rather than by cutting power,
// can count the calls instead of paying for them.
var fsync = func(f *os.File) error { return f.Sync() }
