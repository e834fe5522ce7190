//go:build unix

package freeport

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// reserve takes the lock of port's file without waiting. It reports false
// when another process holds it; when the directory cannot be used (not
// writable by this user) it reserves nothing and reports true with a nil
// file: the port is then only checked free, as it was before locks.
func reserve(port int) (*os.File, bool) {
	dir := filepath.Join(os.TempDir(), "waitingroom-ports")
	if err := os.MkdirAll(dir, 0o1777); err != nil {
		return nil, true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDONLY|os.O_CREATE, 0o666)
	if err != nil {
		return nil, true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// release gives a reserved port back (its server could not have it).
func release(f *os.File) {
	if f != nil {
		f.Close()
	}
}
