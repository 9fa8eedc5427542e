package cache

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"reflect"
)

// Codec turns values into bytes and back. Values of type string and []byte
// bypass the codec: they are stored as they are.
//
// The default is JSONCodec: on the struct sizes repositories usually return it
// measured faster than encoding/gob (whose per-value encoder resends type
// descriptors) and its bytes stay readable with redis-cli. Plug in a faster or
// smaller codec (msgpack, protobuf) with WithCodec.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSONCodec encodes with encoding/json.
type JSONCodec struct{}

// Marshal implements Codec.
func (JSONCodec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

// Unmarshal implements Codec.
func (JSONCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// GobCodec encodes with encoding/gob. It handles types JSON cannot (maps with
// struct keys, unexported-field-free cyclic-free graphs) at a higher cost.
type GobCodec struct{}

// Marshal implements Codec.
func (GobCodec) Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Unmarshal implements Codec.
func (GobCodec) Unmarshal(data []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(data)).Decode(v)
}

// checkValueType rejects an interface value type with JSONCodec: JSON
// decodes into an interface as maps, float64s and strings, never as the
// concrete types that were stored, so every hit would silently differ from
// the value loaded.
func checkValueType[V any](c Codec) error {
	t := reflect.TypeFor[V]()
	if t.Kind() != reflect.Interface {
		return nil
	}
	if _, isJSON := c.(JSONCodec); isJSON {
		return fmt.Errorf("%w: value type %v is an interface, which JSON cannot decode back into the stored types; use a concrete type, or WithCodec with a codec that records types", ErrInvalidOption, t)
	}
	return nil
}
