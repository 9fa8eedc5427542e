package entry

import "bytes"

// valueCodec is the per-type codec a Format uses: raw bytes for string and
// []byte, the configured Codec for everything else.
type valueCodec[V any] struct {
	codec Codec
	raw   bool // V is string or []byte
}

func newValueCodec[V any](c Codec) valueCodec[V] {
	var zero V
	switch any(zero).(type) {
	case string, []byte:
		return valueCodec[V]{codec: c, raw: true}
	}
	return valueCodec[V]{codec: c}
}

func (vc valueCodec[V]) encode(v V) ([]byte, error) {
	if vc.raw {
		switch x := any(v).(type) {
		case string:
			return []byte(x), nil
		case []byte:
			return x, nil
		}
	}
	return vc.codec.Marshal(v)
}

func (vc valueCodec[V]) decode(b []byte) (V, error) {
	var v V
	if vc.raw {
		switch p := any(&v).(type) {
		case *string:
			*p = string(b)
		case *[]byte:
			*p = bytes.Clone(b)
		}
		return v, nil
	}
	err := vc.codec.Unmarshal(b, &v)
	return v, err
}

// Codec turns values into bytes and back (cache.Codec).
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}
