// Package login owns the login use case: given a login id, a password and
// the client's address key, Login.Verify applies the login limits, reads
// the account's credentials from the store, runs BCrypt in one of a
// bounded number of slots — against a dummy hash of the same cost when the
// login id is unknown, so both answers take the same time — and settles
// the limits. It returns the user id, or an error the caller maps to the
// contract: ErrInvalidCredentials, a *RefusedError (a limit, with its
// retry-after), ErrBusy (no BCrypt slot), a *LimiterError or a *StoreError
// (a dependency could not answer).
//
// The user row is read and its pooled connection returned BEFORE BCrypt
// runs. The request's shape (the login id's form, the password's length)
// is the caller's to validate: Verify expects a well-formed attempt.
//
// The limits count FAILURES, so that nobody can lock a buyer out of their
// account (a soft lockout), while credential stuffing stays bounded before
// BCrypt. When Redis cannot decide, they fail closed (a *LimiterError):
// BCrypt is the CPU sink.
//
//	login_attempts_ip  WR_LIMIT_LOGIN_ATTEMPTS_IP 120/1m:60  every attempt per address: the CPU guard
//	                   against one client looping on an account it knows the password of
//	login_ip           WR_LIMIT_LOGIN_IP          10/1m:10   failures per address (any accounts)
//	login_pair         WR_LIMIT_LOGIN_PAIR        5/5m:5     failures per account and address
//	login_id           WR_LIMIT_LOGIN_ID          10/1m:5    failures per account, from anywhere
//
// Before BCrypt, login_id is peeked (nothing recorded), then one script
// decides login_attempts_ip, login_ip and login_pair at once, all or
// nothing (their keys share the address as Redis hash tag): it records the
// attempt on login_attempts_ip and reserves one failure on login_pair;
// login_ip is only peeked. After BCrypt, a wrong password charges login_ip
// and login_id and lets the pair's reservation stand; a correct one (or no
// verdict: the database could not answer) refunds the reservation.
//
// Why the pair is reserved but login_ip only peeked: a reservation keeps a
// bound exact under concurrency (an address gets 5 guesses at an account,
// not 5 plus however many it sends at once), but while BCrypt runs it
// holds a place like a failure. Concurrent logins of one account from one
// address are not a pattern worth serving; many users logging in at once
// behind one NAT (an office, a mobile carrier) are, so login_ip never
// counts successes, even in flight. Its bound under concurrency is its
// budget plus the attempts one address has in flight, themselves bounded
// by login_attempts_ip's burst.
//
// login_id is soft: when it is exhausted, the attempt is refused only if
// the (account, address) pair is in debt — this address has failed on this
// account lately (within login_pair's interval, a minute by default). An
// address that has not been failing goes on to BCrypt, so the owner with
// the right password is never refused by what others did. A failure there
// puts the pair in debt, so a botnet gets one guess per address per
// interval on an account under attack, within login_ip's budget per
// address. login_id is charged after a failed verify, saturating (it never
// owes more than its burst, so once the failures stop it recovers within
// one interval).
//
// BCrypt slots (Config.BcryptConcurrency, by default half the cores): the
// per-address and per-account limits bound what one client can make
// BCrypt do, but not what many addresses together can; the slots bound the
// CPU that logins can take from everything else — polls, enters, streams
// and orders keep the other cores whatever arrives at login. A login that
// finds no slot free within two seconds gets ErrBusy (nothing was
// verified: it is not counted as a failure).
//
// Metrics stay with the caller: Options.OnVerify observes each BCrypt
// verification and Options.OnBusy each login that found no slot.
//
// Concurrency: a Login is safe for concurrent use.
//
// Imports: the standard library, x/crypto/bcrypt, server/ratelimit (the
// limits' primitives) and server/pgstore (its ErrUserNotFound); it reaches
// the database through the small Store interface, never server.
package login
