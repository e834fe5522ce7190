package pow

import (
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"math/bits"
	"strconv"
)

// The page solves in a Web Worker (web/static/pow-worker.js) with the same
// search as Solve: counters 0, 1, 2, … in turn, so both find the same
// solution (worker_test.go checks it in headless Chromium against
// Verify). The worker is a script from the page's own origin, which the
// page's Content-Security-Policy already allows (worker-src falls back to
// script-src 'self').
//
// Cost, measured on the development machine (2 shared cores;
// BENCHMARKS.md): in headless Chromium (TestMeasureWorker, worker_test.go,
// which says how to run it) the worker hashed about 2.7 M/s on a quiet
// machine and crypto.subtle.digest about 0.16 M/s, hence the worker's own
// SHA-256; under load it hashed far less (0.15 M/s at a load average of
// 19), and the page's median solve at 22 bits took 1.0 s quiet but 6.5 s
// loaded, hence DefaultDifficulty 20. Solve, in Go with the CPU's SHA
// instructions, hashes 8–16 M per CPU-second (BenchmarkSolve): a bot pays
// 2^20 hashes, about 0.1 CPU-seconds, per entry at the default. Verify
// costs one HMAC, one SHA-256 and one Redis round trip (BenchmarkVerify).

// validSolution: a decimal counter of 1 to 20 digits.
func validSolution(s string) bool {
	if s == "" || len(s) > maxSolutionLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// solves reports whether SHA-256(token + ":" + solution) starts with at
// least difficulty zero bits (difficulty at most 32: the first word tells).
func solves(token, solution string, difficulty int) bool {
	buf := make([]byte, 0, len(token)+1+len(solution))
	buf = append(append(append(buf, token...), ':'), solution...)
	sum := sha256.Sum256(buf)
	return leadingZeroBits(sum) >= difficulty
}

// leadingZeroBits counts the zero bits at the start of sum, up to 32.
func leadingZeroBits(sum [sha256.Size]byte) int {
	return bits.LeadingZeros32(binary.BigEndian.Uint32(sum[:4]))
}

// Solve is the reference solver: it tries the counters 0, 1, 2, … in turn
// and returns the first, in decimal, whose SHA-256(token + ":" + counter)
// starts with difficulty zero bits (clamped to [MinDifficulty,
// MaxDifficulty]). The page's worker (web/static/pow-worker.js) searches
// in the same order, so both find the same solution. It takes 2^difficulty
// hashes on average; as the worker does, it hashes the 64-byte blocks
// before the counter once, so that each try costs one or two blocks.
func Solve(token string, difficulty int) string {
	difficulty = min(max(difficulty, MinDifficulty), MaxDifficulty)
	prefix := token + ":"
	head := len(prefix) - len(prefix)%64
	h := sha256.New()
	h.Write([]byte(prefix[:head]))
	// sha256's digest implements both; neither fails on its own state.
	mid, _ := h.(encoding.BinaryMarshaler).MarshalBinary()
	restore := h.(encoding.BinaryUnmarshaler)
	tail := append(make([]byte, 0, 64+maxSolutionLen), prefix[head:]...)
	n := len(tail)
	var sum [sha256.Size]byte
	for counter := uint64(0); ; counter++ {
		tail = strconv.AppendUint(tail[:n], counter, 10)
		_ = restore.UnmarshalBinary(mid)
		h.Write(tail)
		if leadingZeroBits([sha256.Size]byte(h.Sum(sum[:0]))) >= difficulty {
			return string(tail[n:])
		}
	}
}
