package hotkey_test

import (
	"fmt"
	"time"

	"github.com/cacheguard/cacheguard/hotkey"
)

func Example() {
	// A clock the example moves by hand; in production leave WithClock out
	// and the detector ticks by itself until Close.
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	d, err := hotkey.New(
		hotkey.WithClock(func() time.Time { return now }),
		hotkey.WithWindow(time.Second),
		hotkey.WithTick(100*time.Millisecond),
		hotkey.WithMinCount(500),
		hotkey.WithDenyPrefix("session:"),
		hotkey.WithOnChange(func(e hotkey.Event) {
			fmt.Printf("%s hot=%v count=%d\n", e.Key, e.Hot, e.Count)
		}),
	)
	if err != nil {
		panic(err)
	}
	defer d.Close()

	for i := range 1000 {
		d.Record("user:42")
		d.Record("session:7")
		d.Record(fmt.Sprintf("user:%d", i))
	}
	now = now.Add(100 * time.Millisecond)
	d.Tick()
	fmt.Println(d.IsHot("user:42"), d.IsHot("session:7"), d.Top(1))

	now = now.Add(time.Second) // a window without accesses
	d.Tick()
	fmt.Println(d.IsHot("user:42"))
	// Output:
	// user:42 hot=true count=1001
	// true false [{user:42 1001}]
	// user:42 hot=false count=0
	// false
}
