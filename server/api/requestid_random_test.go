package api_test

import (
	cryptorand "crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"testing"

	"waitingroom/server/api"
)

// TestRequestIDsAreRandom: fresh ids share no half and do not count: an
// id must not tell how many requests its instance served (a process-wide
// prefix and a counter did).
func TestRequestIDsAreRandom(t *testing.T) {
	const n = 2000
	halves := map[uint64]bool{}
	var prev uint64
	for i := range n {
		b, err := base64.RawURLEncoding.DecodeString(api.NewRequestID())
		if err != nil || len(b) != 16 {
			t.Fatalf("id %d: %x %v, want 16 bytes of base64url", i, b, err)
		}
		hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
		if halves[hi] || halves[lo] {
			t.Fatalf("id %d repeats a half of an earlier id: %x", i, b)
		}
		halves[hi], halves[lo] = true, true
		if i > 0 && lo-prev < 1<<20 {
			t.Fatalf("id %d follows the one before it (%x after %x): a counter", i, lo, prev)
		}
		prev = lo
	}
}

// BenchmarkNewRequestID is the cost of an id, from every core at once.
func BenchmarkNewRequestID(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = api.NewRequestID()
		}
	})
}

// BenchmarkCryptoRandRequestID is an id of 16 bytes read from crypto/rand
// instead, for comparison.
func BenchmarkCryptoRandRequestID(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		var buf [16]byte
		for pb.Next() {
			_, _ = cryptorand.Read(buf[:])
			_ = base64.RawURLEncoding.EncodeToString(buf[:])
		}
	})
}
