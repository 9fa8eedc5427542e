package pubsub_test

import (
	"context"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/internal/pubsub"
	"github.com/cacheguard/cacheguard/internal/redistest"
)

// events records what a Handler hears.
type events struct {
	up   chan string
	msg  chan string
	down chan string
}

func newEvents() *events {
	return &events{up: make(chan string, 16), msg: make(chan string, 16), down: make(chan string, 16)}
}

func (e *events) Message(_, payload string) { e.msg <- payload }
func (e *events) Up(ch string, _ time.Time) { e.up <- ch }
func (e *events) Healthy(string, time.Time) {}
func (e *events) Down(ch string, _ error) {
	select {
	case e.down <- ch:
	default:
	}
}
func (e *events) Report(error) {}

func await(t *testing.T, ch <-chan string, what string) bool {
	t.Helper()
	select {
	case <-ch:
		return true
	case <-time.After(3 * time.Second):
		t.Errorf("%s: nothing within 3 s", what)
		return false
	}
}

// A channel's last handler closes while a new handler subscribes the same
// channel on the same connection (a lock waiter leaving as the next one
// arrives, a cache closed as another with its prefix is made). The new
// handler must end up subscribed on the server: it hears Up and the
// messages published after it.
func TestResubscribeWhileLastHandlerCloses(t *testing.T) {
	_, rdb := redistest.Single(t)
	ctx := context.Background()
	h := pubsub.Acquire(rdb)
	defer h.Release(time.Time{})

	keep := newEvents() // keeps the connection open when "x" leaves it
	defer h.Subscribe(ctx, "keep", keep, pubsub.Options{}).Close()
	await(t, keep.up, "keep Up")

	next := newEvents()
	var nextSub *pubsub.Sub
	first := newEvents()
	sub := h.Subscribe(ctx, "x", first, pubsub.Options{Hooks: &pubsub.Hooks{
		BeforeUnsubscribe: func() { nextSub = h.Subscribe(ctx, "x", next, pubsub.Options{}) },
	}})
	await(t, first.up, "first Up")
	sub.Close() // the new handler subscribes in the middle
	defer nextSub.Close()

	if !await(t, next.up, "the new handler's Up") {
		n, _ := rdb.PubSubNumSub(ctx, "x").Result()
		t.Logf("PUBSUB NUMSUB x = %v", n)
	}
	if err := rdb.Publish(ctx, "x", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	await(t, next.msg, "the message published after the new handler subscribed")
}
