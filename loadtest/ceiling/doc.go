// Package ceiling is the ceiling scenario: one room on one Redis shard,
// with no server in front. Every key of a room shares one hash slot, so
// one Redis core runs every enter, status read and admission of that room;
// this is what that core can take.
//
//	ceiling   --conns (1,2,4,8,16) connections each send pipelines of
//	          --pipeline (100) fresh users' enter scripts (queue.Enters)
//	          for --duration (3s) per step, a fresh room each step, until
//	          the rate has not risen by 5 % twice in a row; each step
//	          reports enters/s and Redis's CPU ÷ wall time (1.00: one core)
//	--costs   with --waiting (100,000) users in a room, --ops (20,000)
//	          operations of each kind the server makes (enter, status,
//	          event number, snapshot, presence stamp, limiter decision,
//	          admission tick, leave, PUBLISH per subscribed instance):
//	          Redis's used_cpu (the whole cost, socket reads and writes
//	          included), commandstats usec (the execution alone) and the
//	          commands of each; the kinds the server batches go in
//	          pipelines of --depth (10) (costs.go)
//	--fill N  used_memory per waiting user once N users wait (fill.go)
//
// It drives the Redis of --redis directly through package queue, under a
// key prefix of its own that it deletes at the end. Give it a Redis nobody
// else uses: the figures are Redis's own counters. They feed BENCHMARKS.md,
// "Capacity model".
package ceiling
