package pow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Verify checks, in this order and before any I/O: the format and the
// HMAC (constant time), the room and the subject, the expiry, the
// difficulty (1 to 32), the solution (at most 20 digits) and the work.
// Only a solution that passes all of them spends the challenge: SET NX PX
// on "<prefix>pow:{<room>}:<nonce>" for the challenge's remaining lifetime
// (the room is the Redis Cluster hash tag); a key already there is a
// replay. Refusals are ErrInvalid with a fixed word for the log (Reason);
// Redis unreachable is ErrUnavailable, and the caller fails closed.

// Difficulty bounds: a challenge asks for at least MinDifficulty and at
// most MaxDifficulty leading zero bits. DefaultDifficulty is a room's
// unless the operator or the room's settings change it; see the package doc
// for what it costs the page's worker.
const (
	MinDifficulty     = 1
	MaxDifficulty     = 32
	DefaultDifficulty = 20
)

// DefaultTTL is a challenge's lifetime when New is given none.
const DefaultTTL = 2 * time.Minute

// maxSolutionLen bounds a solution: a decimal counter, at most 20 digits
// (the largest uint64).
const maxSolutionLen = 20

// Errors of Verify. ErrInvalid wraps the cause; Reason names it.
var (
	// ErrRequired: no challenge token was given.
	ErrRequired = errors.New("pow: challenge required")
	// ErrInvalid: the token or the solution is refused (Reason says why).
	ErrInvalid = errors.New("pow: challenge invalid")
	// ErrUnavailable: the replay check could not reach Redis. The caller
	// fails closed.
	ErrUnavailable = errors.New("pow: replay check unavailable")
)

// Causes wrapped in ErrInvalid, one per word of Reason.
var (
	errMalformed = errors.New("malformed")
	errSignature = errors.New("signature")
	errExpired   = errors.New("expired")
	errSubject   = errors.New("subject")
	errRoom      = errors.New("room")
	errWork      = errors.New("work")
	errReplay    = errors.New("replay")
)

// Pow issues and verifies the challenges of every room. It is safe for
// concurrent use.
type Pow struct {
	rdb    redis.UniversalClient
	prefix string
	secret []byte
	ttl    time.Duration
	now    func() time.Time
}

// Challenge is one issued challenge: the opaque token the client hashes,
// the leading zero bits its solution must reach and when it expires.
type Challenge struct {
	Token      string
	Difficulty int
	ExpiresAt  time.Time
}

// New returns the challenges of an instance whose Redis keys start with
// prefix (e.g. "wr:"). secret is the HMAC key that signs the tokens: every
// instance must share it, or a challenge issued by one fails verification
// on another. ttl is a challenge's lifetime (DefaultTTL when not positive).
// An empty secret would let anyone forge tokens: New panics on it.
func New(rdb redis.UniversalClient, prefix string, secret []byte, ttl time.Duration) *Pow {
	if len(secret) == 0 {
		panic("pow: empty HMAC secret")
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Pow{rdb: rdb, prefix: prefix, secret: append([]byte(nil), secret...), ttl: ttl, now: time.Now}
}

// Issue returns a fresh challenge for subject in room: no I/O, nothing
// stored (the token carries everything, signed). difficulty is clamped to
// [MinDifficulty, MaxDifficulty].
func (p *Pow) Issue(room, subject string, difficulty int) Challenge {
	difficulty = min(max(difficulty, MinDifficulty), MaxDifficulty)
	exp := p.now().Add(p.ttl).UnixMilli()
	c := claims{difficulty: difficulty, expiresMs: exp, room: room, subject: subject}
	// crypto/rand.Read never fails (it panics if the system has no
	// randomness at all).
	_, _ = rand.Read(c.nonce[:])
	return Challenge{Token: c.seal(p.secret), Difficulty: difficulty, ExpiresAt: time.UnixMilli(exp)}
}

// Verify accepts solution to the challenge token once, for subject in
// room. The checks cost O(1) and come before any I/O: the token's format
// and HMAC (constant time), its room and subject, its expiry, its
// difficulty, the solution's format (decimal, at most 20 digits) and the
// work: SHA-256(token + ":" + solution) must start with at least the
// difficulty in zero bits. Only then is the challenge spent: its nonce is
// set in Redis (NX) for the rest of its lifetime, and a nonce already
// there is a replay.
//
// The error is nil, ErrRequired (token empty), ErrInvalid (wrapping the
// cause; see Reason) or ErrUnavailable (Redis unreachable: the caller
// fails closed).
func (p *Pow) Verify(ctx context.Context, room, subject, token, solution string) error {
	pr, err := p.Check(room, subject, token, solution)
	if err != nil {
		return err
	}
	return p.Spend(ctx, pr)
}

// Proof is a solution that passed every test of Verify but the replay
// check: Spend spends it.
type Proof struct {
	// Difficulty is the challenge's, as issued (signed in the token).
	Difficulty int
	room       string
	nonce      [nonceLen]byte
	remaining  time.Duration
}

// Check runs the tests of Verify that need no I/O: nil error, ErrRequired
// (token empty) or ErrInvalid (wrapping the cause). The caller spends the
// proof (Spend) before the work it pays for, or gives it up.
func (p *Pow) Check(room, subject, token, solution string) (Proof, error) {
	if token == "" {
		return Proof{}, ErrRequired
	}
	c, remaining, err := p.check(room, subject, token, solution)
	if err != nil {
		return Proof{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return Proof{Difficulty: c.difficulty, room: room, nonce: c.nonce, remaining: remaining}, nil
}

// Spend records pr's challenge as used (see Verify): nil, ErrInvalid
// (a replay) or ErrUnavailable.
func (p *Pow) Spend(ctx context.Context, pr Proof) error {
	return p.spend(ctx, pr.room, pr.nonce, pr.remaining)
}

// Unspend gives back a spent proof that bought nothing (its enter was
// refused by a rate limit), so that the client may send it again while it
// lives. An error leaves it spent: the strict side.
func (p *Pow) Unspend(ctx context.Context, pr Proof) error {
	return p.rdb.Del(ctx, p.nonceKey(pr.room, pr.nonce)).Err()
}

// check runs every test of Verify that needs no I/O and returns the
// token's claims and the time it has left.
func (p *Pow) check(room, subject, token, solution string) (claims, time.Duration, error) {
	c, err := open(token, p.secret)
	switch {
	case err != nil:
		return c, 0, err
	case c.room != room:
		return c, 0, errRoom
	case c.subject != subject:
		return c, 0, errSubject
	}
	remaining := time.Duration(c.expiresMs-p.now().UnixMilli()) * time.Millisecond
	switch {
	case remaining <= 0:
		return c, 0, errExpired
	case c.difficulty < MinDifficulty || c.difficulty > MaxDifficulty:
		return c, 0, errMalformed
	case !validSolution(solution):
		return c, 0, errMalformed
	case !solves(token, solution, c.difficulty):
		return c, 0, errWork
	}
	return c, remaining, nil
}

// spend records the challenge's nonce as used, for as long as the
// challenge lives: SET NX PX. An existing key is a replay.
func (p *Pow) spend(ctx context.Context, room string, nonce [nonceLen]byte, remaining time.Duration) error {
	err := p.rdb.Do(ctx, "set", p.nonceKey(room, nonce), "1", "px", remaining.Milliseconds(), "nx").Err()
	switch {
	case errors.Is(err, redis.Nil):
		return fmt.Errorf("%w: %w", ErrInvalid, errReplay)
	case err != nil:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// nonceKey is the replay key of a challenge's nonce.
func (p *Pow) nonceKey(room string, nonce [nonceLen]byte) string {
	return p.prefix + "pow:{" + room + "}:" + hex.EncodeToString(nonce[:])
}

// Reason names why Verify refused, from the errors it wrapped (never from
// their text): for ErrInvalid one of "malformed", "signature", "expired",
// "subject", "room", "work" and "replay"; "required" for ErrRequired,
// "unavailable" for ErrUnavailable, "invalid" for anything else. The words
// are fixed, for the security log.
func Reason(err error) string {
	for _, e := range []error{errMalformed, errSignature, errExpired, errSubject, errRoom, errWork, errReplay} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	switch {
	case errors.Is(err, ErrRequired):
		return "required"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	}
	return "invalid"
}
