package systemtest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The system tests are several packages, and go test runs their binaries
// side by side (-p), each with its tests in parallel (-parallel): what a
// single binary once bounded for itself, a browser or a server process of
// its own at a time, is bounded across them by slots, each an exclusive
// lock (flock) on a file of slotDir. The kernel drops a process's locks
// when it exits, however it ends, so a killed test binary holds nothing.

// Slot kinds: how many tests hold one at once across every test binary.
const (
	// BrowserSlots: Chromium and the server under -race are CPU-bound;
	// two browsers at a time on this project's 2-core machine.
	BrowserSlots = 2
	// ChildSlots: the tests that run servers as processes of their own
	// (StartChild), each a -race binary that starts, serves and stops.
	ChildSlots = 2
)

// slotDir holds the slot files, shared by every test binary of the user.
var slotDir = filepath.Join(os.TempDir(), fmt.Sprintf("waitingroom-test-slots-%d", os.Getuid()))

// slotsHeld are the tests holding a slot, by kind: a test takes one slot of
// a kind however many browsers or processes it starts (two per test could
// deadlock two such tests).
var slotsHeld sync.Map // kind → *TestSet

// HoldSlot takes one of n slots of kind for t until it ends, waiting for
// one to be free; a test that holds one already keeps it.
func HoldSlot(t *testing.T, kind string, n int) {
	t.Helper()
	held, _ := slotsHeld.LoadOrStore(kind, &TestSet{})
	if !held.(*TestSet).First(t) {
		return
	}
	if err := os.MkdirAll(slotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := make([]*os.File, n)
	for i := range files {
		f, err := os.OpenFile(filepath.Join(slotDir, fmt.Sprintf("%s-%d", kind, i)), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		files[i] = f
	}
	for {
		for i, f := range files {
			err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err == nil {
				for j, g := range files {
					if j != i {
						g.Close()
					}
				}
				// Closing the file drops the lock.
				t.Cleanup(func() { f.Close() })
				return
			}
			if err != syscall.EWOULDBLOCK {
				t.Fatalf("slot %s: %v", f.Name(), err)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}
