package pow

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// A token is base64url(payload) "." base64url(HMAC-SHA256(secret, label +
// payload)), both without padding: URL-safe and opaque to the client,
// which only hashes it. The payload (version 1):
//
//	1 byte   version
//	1 byte   difficulty (leading zero bits)
//	8 bytes  expiry, Unix milliseconds, big-endian
//	16 bytes nonce (random; the replay key)
//	uvarint  length of the room, then the room
//	uvarint  length of the subject, then the subject
const (
	tokenVersion = 1
	nonceLen     = 16
	fixedLen     = 1 + 1 + 8 + nonceLen
	// maxTokenLen bounds the work of Verify on any input: a token of a
	// 64-byte room and a subject of up to ~2 KB fits.
	maxTokenLen = 4096
	// macLabel separates these MACs from any other use of the secret.
	macLabel = "waitingroom pow token\x00"
)

var b64 = base64.RawURLEncoding.Strict()

// claims are a token's contents.
type claims struct {
	difficulty int
	expiresMs  int64
	nonce      [nonceLen]byte
	room       string
	subject    string
}

// seal returns the signed token of c.
func (c claims) seal(secret []byte) string {
	payload := make([]byte, fixedLen, fixedLen+2*binary.MaxVarintLen64+len(c.room)+len(c.subject))
	payload[0] = tokenVersion
	payload[1] = byte(c.difficulty)
	binary.BigEndian.PutUint64(payload[2:10], uint64(c.expiresMs))
	copy(payload[10:], c.nonce[:])
	payload = binary.AppendUvarint(payload, uint64(len(c.room)))
	payload = append(payload, c.room...)
	payload = binary.AppendUvarint(payload, uint64(len(c.subject)))
	payload = append(payload, c.subject...)
	return b64.EncodeToString(payload) + "." + b64.EncodeToString(mac(secret, payload))
}

func mac(secret, payload []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(macLabel))
	m.Write(payload)
	return m.Sum(nil)
}

// open checks token's format and signature and returns its claims.
func open(token string, secret []byte) (claims, error) {
	var c claims
	enc, sig, ok := strings.Cut(token, ".")
	if !ok || len(token) > maxTokenLen {
		return c, errMalformed
	}
	payload, err := b64.DecodeString(enc)
	if err != nil {
		return c, errMalformed
	}
	got, err := b64.DecodeString(sig)
	if err != nil || len(got) != sha256.Size {
		return c, errMalformed
	}
	if !hmac.Equal(got, mac(secret, payload)) {
		return c, errSignature
	}
	if !c.decode(payload) {
		return c, errMalformed
	}
	return c, nil
}

// decode fills c from a signed payload; false if it is not version 1 or
// not exactly one room and one subject.
func (c *claims) decode(payload []byte) bool {
	if len(payload) < fixedLen || payload[0] != tokenVersion {
		return false
	}
	c.difficulty = int(payload[1])
	c.expiresMs = int64(binary.BigEndian.Uint64(payload[2:10]))
	copy(c.nonce[:], payload[10:fixedLen])
	rest := payload[fixedLen:]
	var ok bool
	if c.room, rest, ok = field(rest); !ok {
		return false
	}
	if c.subject, rest, ok = field(rest); !ok {
		return false
	}
	return len(rest) == 0
}

// field reads one uvarint-length-prefixed string from b.
func field(b []byte) (string, []byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, false
	}
	return string(b[k : k+int(n)]), b[k+int(n):], true
}
