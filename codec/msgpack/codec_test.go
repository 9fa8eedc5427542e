package msgpack_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/codec/msgpack"
)

type user struct {
	ID      int64     `json:"id"`
	Name    string    `json:"name"`
	Tags    []string  `json:"tags,omitempty"`
	Created time.Time `json:"created"`
	Score   float64   `json:"score"`
	private int
}

// It is a cache.Codec.
var _ cache.Codec = msgpack.Codec{}

// A value comes back as it went in, with JSON field names on the wire.
func TestRoundTrip(t *testing.T) {
	in := user{ID: 7, Name: "Ada", Tags: []string{"a", "b"}, Created: time.Unix(1700000000, 123000000).UTC(), Score: 9.5, private: 3}
	b, err := msgpack.Codec{}.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out user
	if err := (msgpack.Codec{}).Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	in.private = 0 // unexported fields are not encoded
	if !out.Created.Equal(in.Created) {
		t.Fatalf("created %v, want %v", out.Created, in.Created)
	}
	out.Created, in.Created = time.Time{}, time.Time{}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("got %+v, want %+v", out, in)
	}
	var named map[string]any
	if err := (msgpack.Codec{}).Unmarshal(b, &named); err != nil {
		t.Fatal(err)
	}
	if _, ok := named["name"]; !ok {
		t.Fatalf("field names %v: want the json tags", named)
	}
}

// Bytes that are not MessagePack of the type are an error, not a panic.
func TestGarbage(t *testing.T) {
	var out user
	if err := (msgpack.Codec{}).Unmarshal([]byte{0xc1, 0xff, 0x00}, &out); err == nil {
		t.Fatal("no error for garbage")
	}
	if err := (msgpack.Codec{}).Unmarshal(nil, &out); err == nil {
		t.Fatal("no error for empty input")
	}
}

// Encoding concurrently from many goroutines shares no state.
func TestConcurrent(t *testing.T) {
	done := make(chan error)
	for i := range 8 {
		go func() {
			var err error
			for j := range 200 {
				in := user{ID: int64(i*1000 + j), Name: "x"}
				var b []byte
				if b, err = (msgpack.Codec{}).Marshal(in); err != nil {
					break
				}
				var out user
				if err = (msgpack.Codec{}).Unmarshal(b, &out); err != nil {
					break
				}
				if out.ID != in.ID {
					t.Errorf("id %d, want %d", out.ID, in.ID)
					break
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
