// Package login owns the login use case: given a login id, a password and
// the client's address key, Login.Verify applies the login limits, reads
// the account's credentials from the store, runs BCrypt in one of a
// bounded number of slots — against a dummy hash of the same cost when the
// login id is unknown, so both answers take the same time — and settles
// the limits. It returns the user id, or an error the caller maps to the
// contract: ErrInvalidCredentials, a *RefusedError (a limit, with its
// retry-after), ErrBusy (no BCrypt slot), a *LimiterError or a *StoreError
// (a dependency could not answer). The user row is read and its pooled
// connection returned BEFORE BCrypt runs; the request's shape is the
// caller's to validate.
//
// The limits count failures, so that nobody can lock a buyer out of their
// account, while credential stuffing stays bounded before BCrypt; they
// fail closed when Redis cannot decide. limits.go's opening comment lists
// them and says how each is decided, and why.
//
// BCrypt slots (Config.BcryptConcurrency, by default half the cores) bound
// the CPU that logins can take from everything else, whatever arrives: a
// login that finds no slot free within two seconds gets ErrBusy (nothing
// was verified: it is not counted as a failure). Metrics stay with the
// caller: Options.OnVerify observes each BCrypt verification and
// Options.OnBusy each login that found no slot.
//
// Concurrency: a Login is safe for concurrent use.
package login
