//go:build unix

package origin

import "syscall"

// peekIdle reports whether an idle socket has nothing to read and is not
// closed: a non-blocking peek finds no data (EAGAIN).
func peekIdle(fd uintptr) bool {
	var b [1]byte
	_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
}
