package loop

import "sync/atomic"

// Latest holds the last value read of something a loop re-reads every
// period and a caller also re-reads on demand (after storing a change):
// each read is numbered when it begins, and a read never replaces the
// value of one that began after it. Without that, the loop's read under
// way when a change was stored lands after the change's own read and puts
// the old value back until the next period.
//
// Concurrency: safe for use by any number of goroutines.
type Latest[T any] struct {
	begun atomic.Int64
	cur   atomic.Pointer[latest[T]]
}

type latest[T any] struct {
	read int64
	v    *T
}

// Begin numbers a read about to be made: call it before reading.
func (l *Latest[T]) Begin() int64 { return l.begun.Add(1) }

// Put makes v, the result of read number read, the value in force, unless
// a read that began later is in force already; it reports whether v was
// taken.
func (l *Latest[T]) Put(read int64, v *T) bool {
	next := &latest[T]{read: read, v: v}
	for {
		cur := l.cur.Load()
		if cur != nil && cur.read > read {
			return false
		}
		if l.cur.CompareAndSwap(cur, next) {
			return true
		}
	}
}

// Get returns the value in force (nil before the first Put).
func (l *Latest[T]) Get() *T {
	if c := l.cur.Load(); c != nil {
		return c.v
	}
	return nil
}
