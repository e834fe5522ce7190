// Package rooms is the rooms scenario: what idle rooms cost, and whether
// a busy room beside them is still admitted on time. On the running
// instances of --instances (each BASE=ADMIN; default the one of --base and
// --admin) it creates one busy room, <--prefix>-busy, whose targetActive
// is --target (1,000,000: capacity always free), and runs two phases:
//
//	lone   the busy room (and the instances' configured rooms) alone
//	among  the same once --rooms (1,000) idle rooms <prefix>-00001 … exist,
//	       created through PUT /admin/rooms/{room}, --conns (64) at a time
//
// Each phase first waits --settle (2s), then measures an idle window of
// --window (10s), with nobody in any room: Redis's commands and CPU (its
// INFO counters, --redis) and each instance's CPU (process_cpu_seconds_total
// on its /metrics) ÷ the window's wall time. Then --users (50) users enter
// the busy room one after another, each after a random pause below --gap
// (100ms, so entries fall at any point of the admission tick), spread over
// the instances in turn, and wait by --transport (sse, ws or poll) as the
// load tool's other users do: READY latency is from sending the enter to
// READY seen (in the enter answer, the stream or a poll); each user leaves
// once READY. The phases use distinct users (ids from --first-user on,
// minted with --mint-tokens; enter reads no database row).
//
// The report sets the phases side by side: commands and Redis CPU per
// idle room are the among window's figures less the lone window's, ÷
// --rooms. At the end every room the run created is deleted with DELETE
// /admin/rooms/{room}?force=true; a server without that route (404 or
// 405) keeps them, and the report says so. The common --room is not used.
package rooms
