package pow

import (
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"testing"
)

// Tokens with a valid MAC but contents Issue never produces are refused as
// malformed: a difficulty outside [1, 32], another version, trailing bytes.
func TestCheckRefusesOddPayloads(t *testing.T) {
	p := New(nil, "", []byte("k"), 0)
	base := claims{expiresMs: p.now().Add(p.ttl).UnixMilli(), room: "r1", subject: "v"}
	for _, tc := range []struct {
		name  string
		token string
	}{
		{"difficulty 0", withDifficulty(base, 0).seal(p.secret)},
		{"difficulty 33", withDifficulty(base, 33).seal(p.secret)},
		{"version 2", resealed(p.secret, base, func(b []byte) []byte { b[0] = 2; return b })},
		{"trailing byte", resealed(p.secret, base, func(b []byte) []byte { return append(b, 0) })},
		{"short", resealed(p.secret, base, func(b []byte) []byte { return b[:fixedLen-1] })},
		{"room overruns", resealed(p.secret, base, func(b []byte) []byte { b[fixedLen] = 200; return b })},
	} {
		if _, _, err := p.check("r1", "v", tc.token, "0"); err != errMalformed {
			t.Errorf("%s: %v, want malformed", tc.name, err)
		}
	}
}

func withDifficulty(c claims, d int) claims { c.difficulty = d; return c }

// resealed signs c's payload after edit changed it.
func resealed(secret []byte, c claims, edit func([]byte) []byte) string {
	c.difficulty = 4
	enc, _, _ := strings.Cut(c.seal(secret), ".")
	payload, _ := b64.DecodeString(enc)
	payload = edit(payload)
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(mac(secret, payload))
}

// solves and leadingZeroBits agree with a count over the whole hash.
func TestLeadingZeroBits(t *testing.T) {
	for i := range 4096 {
		var sum [sha256.Size]byte
		binary.BigEndian.PutUint32(sum[:4], uint32(i)<<20)
		want := 0
		for want < 32 && sum[want/8]&(0x80>>(want%8)) == 0 {
			want++
		}
		if got := leadingZeroBits(sum); got != want {
			t.Fatalf("leadingZeroBits(%x) = %d, want %d", sum[:4], got, want)
		}
	}
}
