package gateway

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"waitingroom/queue/queuetest"
)

// pauseRead holds the first HGETALL made under a context marked with
// heldRead until release is closed, after telling reading that it read.
type pauseRead struct {
	reading chan struct{}
	release chan struct{}
}

type heldRead struct{}

func (p *pauseRead) DialHook(next redis.DialHook) redis.DialHook { return next }
func (p *pauseRead) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (p *pauseRead) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "hgetall" && ctx.Value(heldRead{}) != nil {
			close(p.reading)
			<-p.release
		}
		return err
	}
}

// TestPutIsNotUndoneByAReadUnderWay: the periodic read that had read the
// hash just before Put stored a change must not, when it lands after Put,
// put the old settings back: the change is in force from Put's return.
func TestPutIsNotUndoneByAReadUnderWay(t *testing.T) {
	rdb, prefix := queuetest.Redis(t)
	p := &pauseRead{reading: make(chan struct{}), release: make(chan struct{})}
	rdb.AddHook(p)
	st := NewStore(rdb, prefix, nil, Default(12))
	ctx := context.Background()
	done := make(chan error, 1)
	go func() { done <- st.Load(context.WithValue(ctx, heldRead{}, true)) }()
	<-p.reading // the old settings are read; the read is not in force yet
	s := Default(12)
	s.Pass = PassSession
	if _, err := st.Put(ctx, "sale", s); err != nil {
		t.Fatal(err)
	}
	close(p.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := st.Get("sale").Pass; got != PassSession {
		t.Fatalf("after a read under way landed: pass %q, want %q (Put's change undone)", got, PassSession)
	}
	// A read begun after Put is in force as usual.
	if err := st.Load(ctx); err != nil || st.Get("sale").Pass != PassSession {
		t.Fatalf("a later read: %v, pass %q", err, st.Get("sale").Pass)
	}
}
