package otel

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cacheguard/cacheguard/cache"
	"github.com/cacheguard/cacheguard/consistency"
	"github.com/cacheguard/cacheguard/hotkey"
	"github.com/cacheguard/cacheguard/lock"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// source serves a Stats snapshot to a Register function.
type source[S any] func() S

func (f source[S]) Stats() S { return f() }

type queueSource struct{ source[consistency.Stats] }

func (queueSource) Pending(context.Context) (int64, error) { return 0, nil }

// exportsEveryField fails for each numeric field of S whose value no point
// of the instruments register makes depends on: with every field set apart,
// it moves one field at a time and compares the collections. A field added to
// a Stats without a metric fails here.
func exportsEveryField[S any](t *testing.T, register func(metric.Meter, func() S) (metric.Registration, error)) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	var st S
	if _, err := register(mp.Meter(ScopeName), func() S { return st }); err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(&st).Elem()
	add := func(f reflect.Value, d int64) bool {
		switch f.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(f.Int() + d)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(f.Uint() + uint64(d))
		default:
			return false
		}
		return true
	}
	for i := range v.NumField() {
		add(v.Field(i), int64(i+1)*11) // apart, and the parts below their wholes
	}
	base := collect(t, reader)
	for i := range v.NumField() {
		name := v.Type().String() + "." + v.Type().Field(i).Name
		d := int64(5)
		if v.Field(i).Type() == reflect.TypeFor[time.Duration]() {
			d = int64(5 * time.Second) // gauges in seconds
		}
		if !add(v.Field(i), d) {
			t.Errorf("%s is not a number: no check knows how to export it", name)
			continue
		}
		moved := collect(t, reader)
		add(v.Field(i), -d)
		if maps.Equal(base, moved) {
			t.Errorf("%s: no exported metric follows it", name)
		}
	}
}

// Every Stats the registrations of this module read: each of its numeric
// fields has a metric.
func TestEveryStatsFieldIsExported(t *testing.T) {
	t.Run("cache", func(t *testing.T) {
		exportsEveryField(t, func(m metric.Meter, st func() cache.Stats) (metric.Registration, error) {
			return RegisterCache(m, "c", source[cache.Stats](st))
		})
	})
	t.Run("queue", func(t *testing.T) {
		exportsEveryField(t, func(m metric.Meter, st func() consistency.Stats) (metric.Registration, error) {
			return RegisterQueue(m, "q", queueSource{st})
		})
	})
	t.Run("lock", func(t *testing.T) {
		exportsEveryField(t, func(m metric.Meter, st func() lock.Stats) (metric.Registration, error) {
			return RegisterLockStats(m, "l", source[lock.Stats](st))
		})
	})
	t.Run("hotkey", func(t *testing.T) {
		exportsEveryField(t, func(m metric.Meter, st func() hotkey.Stats) (metric.Registration, error) {
			return RegisterHotKeys(m, "h", source[hotkey.Stats](st))
		})
	})
	t.Run("binlog", func(t *testing.T) {
		exportsEveryField(t, func(m metric.Meter, st func() BinlogStats) (metric.Registration, error) {
			return RegisterBinlog(m, "b", st)
		})
	})
}

// BinlogStats has the fields of the binlog module's Stats, which this module
// does not import, in its order and of its types, so that a conversion copies
// one into the other: the fields are read from its source, where the
// repository holds it.
func TestBinlogStatsMirrorsTheSource(t *testing.T) {
	const path = "../consistency/binlog/stats.go"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("the binlog module's source is not here (%v): a build outside the repository", err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Stats" {
			return true
		}
		for _, fld := range ts.Type.(*ast.StructType).Fields.List {
			for _, id := range fld.Names {
				want = append(want, id.Name+" "+types.ExprString(fld.Type))
			}
		}
		return false
	})
	if len(want) == 0 {
		t.Fatalf("no type Stats in %s", path)
	}
	for f := range reflect.TypeFor[BinlogStats]().Fields() {
		got = append(got, f.Name+" "+f.Type.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("BinlogStats has\n\t%v\nbinlog.Stats has\n\t%v", got, want)
	}
}
