package loop_test

import (
	"testing"

	"waitingroom/internal/loop"
)

func TestLatestKeepsTheNewestRead(t *testing.T) {
	var l loop.Latest[string]
	if l.Get() != nil {
		t.Fatal("a value before any Put")
	}
	old, now := "old", "new"
	early := l.Begin() // the loop's read, under way
	late := l.Begin()  // the read after a change was stored
	if !l.Put(late, &now) {
		t.Fatal("the later read was refused")
	}
	if l.Put(early, &old) || *l.Get() != "new" {
		t.Fatalf("the earlier read, landing last, replaced the later one: %q", *l.Get())
	}
	next := "next"
	if !l.Put(l.Begin(), &next) || *l.Get() != "next" {
		t.Fatalf("a read begun after both was refused: %q", *l.Get())
	}
}
