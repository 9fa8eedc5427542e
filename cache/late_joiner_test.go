package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// failGets makes GET and SET (the read path's commands) fail while on, as a
// Redis node that stopped answering reads would; other commands (UNLINK, the
// scripts) go through. It injects the fault at the client, on a real server.
type failGets struct{ on *atomic.Bool }

func (h failGets) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h failGets) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.on.Load() && (cmd.Name() == "get" || cmd.Name() == "set") {
			err := errors.New("injected: read failed")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}
func (h failGets) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !h.on.Load() {
			return next(ctx, cmds)
		}
		var rest []redis.Cmder
		for _, cmd := range cmds {
			if cmd.Name() == "get" || cmd.Name() == "set" {
				cmd.SetErr(errors.New("injected: read failed"))
			} else {
				rest = append(rest, cmd)
			}
		}
		if len(rest) == 0 {
			return errors.New("injected: read failed")
		}
		return next(ctx, rest)
	}
}

// A Get that starts after Delete returned never gets a value loaded before
// the Delete, even when it would join a load already under way: here the
// fallback load that answers while Redis reads fail.
func TestLateJoinerAfterDelete(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		var failing atomic.Bool
		rdb.AddHook(failGets{&failing})
		c := newCache[string](t, rdb, WithFallbackLoads(4))
		var mu sync.Mutex
		db := "old"
		read := make(chan struct{})
		resume := make(chan struct{})
		var loads atomic.Int64
		load := func(context.Context, string) (string, error) {
			mu.Lock()
			v := db
			mu.Unlock()
			if loads.Add(1) == 1 {
				close(read)
				<-resume
			}
			return v, nil
		}
		failing.Store(true)
		first := make(chan string, 1)
		go func() {
			v, _ := c.Get(ctx, "k", load)
			first <- v
		}()
		<-read // the first load has read the old row
		mu.Lock()
		db = "new"
		mu.Unlock()
		if err := c.Delete(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		late := make(chan string, 1)
		go func() {
			v, err := c.Get(ctx, "k", load)
			if err != nil {
				t.Error(err)
			}
			late <- v
		}()
		joined := false
		select {
		case v := <-late:
			if v != "new" {
				t.Errorf("Get after Delete = %q, want the row as of the Delete", v)
			}
		case <-time.After(10 * time.Second):
			joined = true
			t.Error("Get after Delete joined the load that started before it")
		}
		close(resume)
		<-first
		if joined {
			<-late
		}
	})
}

// A caller whose fill was refused (a Delete landed during its slow load) and
// that then finds another caller's lease waits for it with a full budget, not
// with what its own slow load left of it.
func TestRefillGetsFreshWaitBudget(t *testing.T) {
	onTopologies(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const wait = 300 * time.Millisecond
		a := newCache[string](t, rdb, WithWait(wait))
		b := newCache[string](t, rdb, WithPrefix(prefixFor(t)), WithWait(wait))
		aRead, bRead := make(chan struct{}), make(chan struct{})
		bRelease := make(chan struct{})
		var once sync.Once
		a.hooks().OnLeaseWait = func(string) { once.Do(func() { close(bRelease) }) }
		var aLoads atomic.Int64
		aLoad := func(context.Context, string) (string, error) {
			if aLoads.Add(1) == 1 {
				close(aRead)
				// A slow load: longer than the whole wait budget.
				time.Sleep(wait + 100*time.Millisecond)
				<-bRead
			}
			return "a", nil
		}
		bLoad := func(context.Context, string) (string, error) {
			close(bRead)
			<-bRelease
			return "b", nil
		}
		got := make(chan error, 1)
		go func() {
			_, err := a.Get(ctx, "k", aLoad)
			got <- err
		}()
		<-aRead
		if err := a.Delete(ctx, "k"); err != nil { // a's fill will be refused
			t.Fatal(err)
		}
		bDone := make(chan error, 1)
		go func() {
			_, err := b.Get(ctx, "k", bLoad) // b takes the lease and loads
			bDone <- err
		}()
		if err := <-got; err != nil {
			t.Errorf("refused filler waiting for the next lease: %v", err)
		}
		once.Do(func() { close(bRelease) })
		if err := <-bDone; err != nil {
			t.Error(err)
		}
	})
}
